/**
 * trackBody's idle timer (the concurrency slot of a body nobody reads) on a virtual clock.
 */
import { expect, test } from "vitest";
import { ManualClock } from "../../src/clock.ts";
import { trackBody } from "../../src/http/body-end.ts";

test("the idle timer ends a body that stopped being read, even when the remaining time rounds to nothing (no re-arm at the same instant for ever)", async () => {
  // Found by a soak test (2026-11-24): a read ending at this instant, then an idle check at 30 000,
  // re-armed for `idleMs - (now - last)`, landed an ulp short of `last + idleMs`; the remainder,
  // 3.6e-12 ms, added to 32768.027311 is 32768.027311 again, so a ManualClock fired the same timer
  // at the same instant for ever and `runAll` never drained.
  const clock = new ManualClock();
  let ended: boolean | undefined;
  const endless = new ReadableStream<Uint8Array>({ pull: (c) => c.enqueue(new Uint8Array([1])) });
  const tracked = trackBody(new Response(endless), (idle) => (ended = idle), clock, 30_000);
  const reader = tracked.body!.getReader();
  clock.jumpTo(2768.0273110000003);
  await reader.read(); // the last read: idle time counts from here
  const fired = await clock.runAll(1000);
  expect(ended).toBe(true); // ended as idle (the body stays readable)
  expect(fired).toBeLessThanOrEqual(3);
  expect(clock.now()).toBeGreaterThanOrEqual(2768.0273110000003 + 30_000);
  await reader.cancel();
});
