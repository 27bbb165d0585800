/**
 * One process of the "unknown limits" fleet measurement: its own client, closed-loop callers at one
 * shared server quota, until the common end time. Prints `RESULT {answers}`.
 *
 * Usage: node bench/adaptive-child.ts <client> <url> <callers> <startEpochMs> <durationMs>
 *
 * @module
 */
import { type ClientId, drive, Recorder } from "./adaptive/drivers.ts";
import { report } from "./lib/child.ts";

const [client, url, callers, startEpoch, duration] = process.argv.slice(2);
// The parent's start, on this process's monotonic clock (the wall clock is shared across processes).
const t0 = performance.now() - (Date.now() - Number(startEpoch));
// Wait for the common start: processes come up at different times (loading a second or so apart on a
// loaded machine), and one that began early would slow-start into an empty quota and keep the larger
// share (see the README's fleet figures for processes that start apart).
const early = t0 - performance.now();
if (early > 0) await new Promise((resolve) => setTimeout(resolve, early));
else console.error(`fleet child started ${Math.round(-early)} ms after the common start`);
const recorder = new Recorder(t0);
await drive(client as ClientId, {
  url: url!,
  callers: Number(callers),
  durationMs: Number(duration),
  told: undefined,
  recorder,
  endAt: t0 + Number(duration),
});
report(recorder.answers);
