/**
 * When a response body ends, for the throttled fetch's concurrency slots: a copy of the response
 * whose body reports its end once — fully read, cancelled or errored — or after a time nobody read
 * from it (see `slotTimeout` in `costs.ts`).
 *
 * @module
 */
import type { Clock, TimerHandle } from "../clock.ts";
import { armSlotTimer, clearSlotTimer } from "./slot-timers.ts";
import { rebuiltResponse } from "./rebuilt-response.ts";

const NULL_BODY = new Set([204, 205, 304]);

/**
 * The response with a body that reports its end once — fully read, cancelled or errored (also while
 * nobody reads it) — or after `idleMs` ms in which no read was made or pending (the body stays
 * readable then; `ended` is told `idle: true`). A response without a body
 * (or one a `Response` cannot be rebuilt with) reports at once and is returned as is. The copy keeps
 * the status, headers, `url`, `redirected` and `type` of the original (see `rebuilt-response.ts`). @internal
 *
 * @example
 * ```ts
 * const tracked = trackBody(response, () => hold.bodyEnded(), clock, 30_000);
 * ```
 */
export function trackBody(response: Response, ended: (idle: boolean) => void, clock: Clock, idleMs: number): Response {
  const body = response.body;
  // A status that has no body (Chromium gives a 204 an empty one, which no new Response may carry).
  if (body === null || response.status < 200 || response.status > 599 || NULL_BODY.has(response.status) || body.locked) {
    ended(false);
    return response;
  }
  let done = false;
  let last = clock.now();
  // A read in progress (the caller awaits data a slow server has not sent yet, e.g. an SSE gap) is
  // reading: the idle time counts only while no read is pending.
  let reading = false;
  let timer: TimerHandle | undefined;
  const finish = (idle = false) => {
    if (done) return;
    done = true;
    if (timer !== undefined) clearSlotTimer(clock, timer);
    timer = undefined;
    ended(idle);
  };
  // Checks idleness from the last read, so reading costs no timer work per chunk. No timer while a
  // read is pending: the read's end arms it again.
  //
  // The due time is absolute (`last + idleMs`), compared with the clock as is: re-arming for
  // `idleMs - (now - last)` instead could land an ulp short of it, leave a remainder of 1e-12 ms,
  // and — on a virtual clock, which fires at exactly `now + delay` — re-arm at the same instant for
  // ever (a test's `runAll` that never returns).
  const check = () => {
    timer = undefined;
    if (done || reading) return;
    const due = last + idleMs;
    const now = clock.now();
    if (now >= due) finish(true);
    else timer = armSlotTimer(clock, check, due - now);
  };
  timer = armSlotTimer(clock, check, idleMs);
  const reader = body.getReader();
  // The body may end or error while nobody pulls (the caller's abort errors it, the server closes
  // it): the slot frees then, not after `slotTimeout`. A close is seen only once its data was read.
  reader.closed.then(() => finish(), () => finish());
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      reading = true;
      try {
        const chunk = await reader.read();
        if (chunk.done) {
          controller.close();
          finish();
        } else controller.enqueue(chunk.value);
      } catch (error) {
        finish();
        controller.error(error);
      } finally {
        reading = false;
        last = clock.now();
        if (timer === undefined && !done) timer = armSlotTimer(clock, check, idleMs);
      }
    },
    cancel(reason) {
      finish();
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
  return rebuiltResponse(response, stream);
}
