/**
 * Test your own rate-limited code in virtual time: pass a ManualClock, advance it, assert exact
 * times. No sleeps, no flakiness, instant. Run it:
 *
 *   node examples/testing-with-manual-clock.ts
 */
import assert from "node:assert/strict";
import { SmoothLimiter } from "../src/index.ts";
import { ManualClock } from "../src/testing.ts";

/** The code under test: sends a batch of messages through a limiter. */
async function sendAll(limiter: SmoothLimiter, messages: string[], send: (m: string) => void): Promise<void> {
  await Promise.all(messages.map((m) => limiter.schedule(() => send(m))));
}

const clock = new ManualClock();
const limiter = new SmoothLimiter({ limit: 4, interval: 1000, clock });
const sent: Array<[string, number]> = [];
const done = sendAll(limiter, ["a", "b", "c", "d", "e"], (m) => sent.push([m, clock.now()]));

await clock.advance(1000); // one virtual second, instantly
await done;
assert.deepEqual(sent, [["a", 0], ["b", 250], ["c", 500], ["d", 750], ["e", 1000]]);
console.log("sent at exact virtual times:", sent.map(([m, t]) => `${m}@${t}`).join(" "));
