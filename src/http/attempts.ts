/**
 * The attempts of one throttled-fetch call (see `throttled-fetch.ts` for the whole design): each
 * attempt is one task on the limiter (or a reservation, with costs), after which `after-attempt.ts`
 * reads the server's signals and decides; a retry waits through the limiter's pause or a sleep.
 *
 * @module
 */
import { abortReason } from "../limiters/gate.ts";
import { Unstarted } from "../limiters/settle.ts";
import type { Limiter, ScheduleOptions } from "../limiters/limiter.ts";
import type { Reservation } from "../limiters/reservation.ts";
import { ARRIVAL, newArrival } from "../limiters/waiter.ts";
import type { SendTag } from "../adaptive/controller.ts";
import { type Admission, admitAdaptive, mustPace } from "../adaptive/rates.ts";
import { isResponse, planBody } from "./body.ts";
import { TimeoutError } from "./errors.ts";
import { SluiceError } from "../errors.ts";
import { cancelBody, type HeldResponse, holdForRetry } from "./held-response.ts";
import type { FetchInput, FetchLike, ResolvedOptions } from "./options.ts";
import { scrubError } from "./redact.ts";
import { attemptInit, prepareCall } from "./request.ts";
import { startFlight } from "./in-flight.ts";
import { anySignal, sleep, startTimer, type Timer, untilAborted } from "./timers.ts";
import { applySettle, asCostError, AttemptHold, checkCostResult, type Cost, priorityOf, scheduleUntilEnd, trackBody } from "./costs.ts";
import { waitForSlot } from "./slot-timers.ts";
import { holdsSlots, slotCost } from "./slots.ts";
import { afterAttempt, type AttemptResult, type Decided } from "./after-attempt.ts";
import type { CallState } from "./throttled-fetch.ts";
import { describeValue, quietly } from "../validate.ts";

/**
 * Runs a call's attempts until one is final, or the call fails. @internal
 *
 * @example
 * ```ts
 * const response = await runAttempts(config, url, init, fetch, init?.signal ?? undefined, new CallState(url, init), false);
 * ```
 */
export async function runAttempts(
  config: ResolvedOptions,
  input: FetchInput,
  init: RequestInit | undefined,
  fetchImpl: FetchLike,
  callSignal: AbortSignal | undefined,
  state: CallState,
  full: boolean,
): Promise<Response> {
  const { policy, clock } = config;
  // When the call was made (as the total timer, armed just before): a slow Request body or an async
  // `cost` counts towards `totalTimeout`, so a retry whose wait would end after it is not made.
  // Read only against a finite `totalTimeout` (elapsed + delay ≥ Infinity never holds): no clock read otherwise.
  const started = config.totalTimeout === Infinity ? 0 : clock.now();
  // Only a Request's body is read asynchronously; any other plan is at hand (no await hop).
  const planned = planBody(input, init, policy.limit > 0, callSignal);
  const plan = planned instanceof Promise ? await planned : planned;
  if (callSignal?.aborted) throw abortReason(callSignal);
  // fetch's TypeError for an invalid request (quoting the URL, with a `cause` that holds it) goes up
  // as it is: the call scrubs it in place, cause included (see `runCall`).
  let call = prepareCall(input, init, plan, config.idempotencyKey, policy.methods, full || !config.lean);
  state.prepared = call;
  const idempotent = policy.methods.has(call.method) || call.hasIdempotencyKey;
  const replayable = plan.kind !== "streamed";
  const permits = typeof config.permits === "function" ? config.permits(call.request) : config.permits;
  // An `async` permits function: refused where the limiter checks it, its own rejection handled here.
  if (typeof permits !== "number") quietly(permits);
  // The cost before the key: a key may depend on what the cost read from the body (an LLM profile's
  // budgets are per model, and the model is in the body).
  const costs = config.costs;
  // An async `cost` runs under the call's signal: the caller's abort and `totalTimeout` (armed
  // before the call began) end the call while it is pending.
  let cost: Cost | undefined;
  if (costs === undefined || !costs.reserve) cost = undefined;
  else if (typeof costs.cost !== "function") cost = costs.cost;
  else {
    // A streamed body (sent once, never buffered by us) is teed for `cost`, which may read it (an
    // LLM profile estimates tokens from it): its copy is buffered only as far as `cost` reads, and
    // what it leaves unread is cancelled once it returns. That request is the call's view for the
    // other hooks too (`key`, `settle`, `onResponse` see the very object `cost` saw).
    const body = init?.body;
    if (plan.kind === "streamed" && typeof ReadableStream === "function" && body instanceof ReadableStream && !body.locked) {
      const [forCost, forSend] = body.tee();
      init = { ...init, body: forSend };
      const request = new Request(call.request, { body: forCost, duplex: "half" } as RequestInit);
      call = { method: call.method, url: call.url, headers: call.headers, hasIdempotencyKey: call.hasIdempotencyKey, request };
      state.prepared = call;
    }
    try {
      cost = checkedCost(await untilAborted(costs.cost(call.request), callSignal), costs.named);
    } finally {
      const teed = plan.kind === "streamed" ? call.request.body : null;
      if (teed !== null && !teed.locked) teed.cancel().catch(() => {});
    }
  }
  // With a KeyedLimiter or `adaptive`: one limiter, and one learned rate, per key.
  const key = config.keyed === undefined && config.adaptive === undefined ? undefined : config.key(call.request);
  if (key !== undefined && typeof key !== "string") {
    quietly(key);
    throw new TypeError(`\`key\` must return a string, got ${describeValue(key)}`);
  }
  // The response being retried, until its retry is sent (then discarded) or refused (then returned).
  let held: HeldResponse | undefined;
  /** The error of the attempt being retried (none when it answered). */
  let failed: unknown;
  // The slot of a retried response (`maxConcurrent`): it ends once the body's drain is over (see
  // below) — the server is busy with a request until it has sent the body, and a small one is
  // usually whole by then — or in `finally` if the call ends before that.
  let heldSlot: ((idle?: boolean) => void) | undefined;
  const endHeldSlot = (): void => {
    const end = heldSlot;
    heldSlot = undefined;
    end?.();
  };
  const priority = config.priority === undefined && init?.priority === undefined ? 0 : priorityOf(init, () => call.request, config.priority);
  // Every attempt's window slot counts from its response (`countFrom: "completion"`), also on a
  // window the user built counting from the grant: safe at a strict server's documented limit
  // whatever the latency, like the `limit`/`interval` shorthand. Limiters without a window ignore it.
  const scheduleOptions: ScheduleOptions = config.maxWait === undefined
    ? { permits, signal: callSignal, countFrom: "completion" }
    : { permits, signal: callSignal, maxWait: config.maxWait, countFrom: "completion" };
  if (priority !== 0) (scheduleOptions as { priority?: number }).priority = priority;
  // A retry waits in the call's place in the queue, not behind everyone who came since (see README
  // "A retry keeps its place"): the arrival number the first attempt queues with, kept.
  const place = newArrival();
  let retryOptions: ScheduleOptions | undefined;
  // With `maxConcurrent` alone: attempts are tasks held until their body ends (see `scheduleUntilEnd`).
  // (A task of `permits` takes that many of every member, slots too: other costs reserve instead.)
  const slotOnly = costs !== undefined && !costs.reserve && permits === 1;
  const reserved = costs === undefined || slotOnly ? undefined : cost ?? permits;
  const endBudget = config.budget?.start();
  // Per attempt, a controller and a timer only for a finite `timeout` (the caller's signal alone
  // is passed as is); the caller's init unchanged when nothing in it needs replacing.
  const timed = config.timeout !== Infinity;
  const lean = !full;

  try {
    for (;;) {
      // Looked up per attempt: a KeyedLimiter may have replaced an idle key's limiter meanwhile.
      const limiter: Limiter | undefined = config.keyed === undefined
        ? config.limiter
        : config.slotsOf === undefined ? config.keyed.get(key!) : config.slotsOf(config.keyed.get(key!), key!);
      // The key's learned rate (with `adaptive`): waited for first, fed each answer. Retries come
      // through here again, so they pay the learned rate too.
      const ceiling = config.adaptive === undefined ? Infinity : config.ceiling(limiter);
      const adaptive = config.adaptive?.get(key!, ceiling, limiter);
      let admitted: Admission | undefined;
      let tag: SendTag | undefined;
      let adaptivePause = 0;
      let sent = false;
      let timedOut: TimeoutError | undefined;
      let inFlight = 0; // the other requests on this limiter in flight when the response came
      let result: AttemptResult;
      let hold: AttemptHold | undefined;
      let endSlot: (() => void) | undefined;
      const options = state.attempts === 0 ? scheduleOptions : retryOptions ??= { ...scheduleOptions, [ARRIVAL]: place } as ScheduleOptions;
      // A grant that may need a slot: while it waits, the timers that free unread bodies' slots keep
      // the process alive (else it could exit with this caller queued; see slot-timers.ts).
      const slotWaitOver = costs?.maxConcurrent !== undefined || (limiter !== undefined && holdsSlots(limiter)) ? waitForSlot() : undefined;
      try {
        if (adaptive !== undefined) {
          // The call's priority, and on a retry its place, hold at the learned rate too (they are
          // the attempt's schedule options).
          const { permits: _, countFrom: __, ...admit } = options;
          admitted = await admitAdaptive(adaptive, admit, ceiling);
        }
        const queuedAt = adaptive === undefined ? 0 : clock.now(); // read only with `adaptive`
        const send = async () => {
          slotWaitOver?.();
          // Granted, but the caller left before anything was sent (e.g. aborted from the limiter's
          // own "grant" event): the grant goes back (`Unstarted`), the call rejects with the reason.
          if (callSignal?.aborted) throw new Unstarted(abortReason(callSignal));
          // Held by the limiter (its pause, its window) after the learned rate admitted it, or
          // passed at the ceiling before a cut: the learned rate paces it again now, so attempts
          // queued there do not leave together when the limiter lets them go.
          if (adaptive !== undefined && (admitted!.passed || (clock.now() - queuedAt >= 1 && adaptive.paused)) && mustPace(adaptive, ceiling)) {
            // The first slot goes back before the new one is asked: nothing was sent on it, and keeping
            // it spent made every attempt the told limiter held take two slots — half the learned rate
            // (red-team: 6/s against a 10/s server, told 12).
            admitted!.cancel();
            let again: Admission;
            try {
              again = await admitAdaptive(adaptive, priority === 0 ? { signal: callSignal } : { signal: callSignal, priority }, ceiling);
            } catch (error) {
              throw callSignal?.aborted ? new Unstarted(error) : error; // not sent: the grant goes back
            }
            admitted = { ...again, waited: again.waited || admitted!.waited };
          }
          sent = true;
          if (adaptive !== undefined) {
            admitted!.commit(); // sent: the learned rate's slot is used, and the key can be idle again
            tag = adaptive.onSent(admitted!.waited);
          }
          const attempts = ++state.attempts;
          held?.discard();
          held = undefined;
          let timer: Timer | undefined;
          let signal = callSignal;
          if (timed || full) {
            const attempt = new AbortController();
            timer = startTimer(clock, config.timeout, () => {
              timedOut = new TimeoutError(state.label(), "attempt", config.timeout, attempts);
              attempt.abort(timedOut);
            });
            signal = anySignal([callSignal, timed ? attempt.signal : undefined]);
          }
          const flight = startFlight(limiter ?? adaptive!);
          try {
            const fetching = fetchImpl(input, attemptInit(init, plan, call.headers, signal, lean));
            // A fetch that ignores its signal (a test double, an adapter) must not outlive the
            // attempt's timeout or the caller's abort: raced, and a late response's body cancelled
            // (red-team, 2026-11-27: such a call never settled). No listener without a signal.
            const response = signal === undefined || (fetchImpl === RUNTIME_FETCH && !timed && config.totalTimeout === Infinity && init?.signal == null) ? await fetching : await untilAborted(fetching, signal, discardLate);
            inFlight = flight.others();
            return response;
          } finally {
            flight.end();
            timer?.cancel();
          }
        };
        let response: Response;
        if (limiter === undefined) response = await send();
        else if (slotOnly) {
          const scheduled = scheduleUntilEnd(limiter, send, options);
          endSlot = scheduled.end;
          response = await scheduled.response;
        } else if (reserved === undefined) response = await limiter.schedule(send, options);
        else {
          const asked = costs!.maxConcurrent === undefined ? reserved : slotCost(limiter, reserved);
          const reservation = await reserveOn(limiter, asked, options, costs!.named);
          // Granted, but the caller left before anything was sent: everything goes back.
          if (callSignal?.aborted) {
            reservation.cancel();
            throw abortReason(callSignal);
          }
          // A slot of the fetch's `maxConcurrent`: the body's end (or `slotTimeout` unread) ends the
          // reservation, not only its cost. A slot of the limiter's own (a vendor profile's) does too
          // when the cost comes from the body as it is read (see `costFromBody`).
          hold = new AttemptHold(reservation, clock, {
            slot: costs!.maxConcurrent !== undefined,
            ownSlots: holdsSlots(limiter),
            slotTimeout: costs!.slotTimeout,
          });
          response = await send();
        }
        if (tag !== undefined && isResponse(response)) {
          try {
            adaptivePause = adaptive!.onResponse(tag, response, { maxDelay: policy.maxRetryAfter }).pauseMs;
          } catch (error) {
            // `onChange` threw (the learned rate was applied before it was called): as for any
            // hook, the call fails with its error, unretried, and the response's socket is freed.
            cancelBody(response);
            throw new HookFailed(error);
          }
        }
        result = { response };
      } catch (caught) {
        if (caught instanceof HookFailed) {
          hold?.release();
          endSlot?.();
          throw caught.error;
        }
        const unstarted = caught instanceof Unstarted;
        const error = unstarted ? caught.reason : caught;
        if (unstarted) hold?.cancel(); // nothing was sent: everything goes back
        else hold?.release(); // a failed attempt counts as reserved
        // Not sent: the limiter refused or the wait was aborted; nothing was taken. A refused retry
        // gives the caller the response it already had (the README's promise), not the refusal.
        if (!sent) {
          admitted?.cancel(); // the learned rate's permit, taken for an attempt never sent
          if (held !== undefined && !callSignal?.aborted) {
            const last = held.response;
            held = undefined;
            return last;
          }
          // A refused retry of an attempt that failed: the limiter's error carries that failure as
          // its cause (it was lost: the caller saw a MaxWaitExceededError and no network error).
          if (failed !== undefined && error instanceof SluiceError && error.cause === undefined && !callSignal?.aborted) {
            Object.defineProperty(error, "cause", { value: failed, writable: true, configurable: true });
          }
          throw error;
        }
        if (tag !== undefined) adaptive!.onAbandoned(tag);
        // The caller's abort (or the total timeout) wins over whatever the attempt failed with.
        if (callSignal?.aborted) throw abortReason(callSignal);
        // An attempt cut off by our timeout fails with the TimeoutError, whatever fetch made of the abort.
        result = timedOut !== undefined ? { error: timedOut, timedOut: true } : { error: scrubError(error, state.secrets()), timedOut: false };
      } finally {
        slotWaitOver?.();
      }

      if (result.response !== undefined && !isResponse(result.response)) {
        hold?.release();
        endSlot?.();
        throw new TypeError(`\`fetch\` must resolve with a Response, got ${typeof result.response}`);
      }
      let decided: Decided;
      try {
        const after = afterAttempt(config, {
          call, result, attempt: state.attempts, key, limiter, adaptive, adaptivePause, idempotent, replayable, started, inFlight, signal: callSignal,
        });
        // Decided at once unless a hook or the decision needs awaiting (no hop for a final response).
        decided = after instanceof Promise ? await after : after;
      } catch (error) {
        hold?.release();
        endSlot?.();
        throw error;
      }
      if (endSlot !== undefined && result.response !== undefined) {
        if (decided.retry === false) return trackBody(result.response, endSlot, clock, costs!.slotTimeout);
        heldSlot = endSlot; // a retried body: its slot ends with it (see `heldSlot`)
      }
      if (hold !== undefined && result.response !== undefined) {
        // `settle` reads every response, retried ones too; the caller (or the retry's drain) gets
        // the response it hands back.
        const response = applySettle(costs!.settle, result.response, { request: call.request, reserved: reserved!, attempt: state.attempts }, hold);
        if (decided.retry === false) {
          return hold.slot ? trackBody(response, (idle) => hold.bodyEnded(idle), clock, costs!.slotTimeout) : response;
        }
        result = { response };
        const ended = hold;
        if (hold.slot) heldSlot = (idle) => ended.bodyEnded(idle); // its slot ends with the body (see `heldSlot`)
        else hold.bodyEnded();
      }
      if (decided.retry === false) {
        if (result.response !== undefined) return result.response;
        throw result.error;
      }
      failed = result.response === undefined ? result.error : undefined;
      // Wait out the part of the delay the limiter's pause does not already cover, draining the
      // retried body meanwhile (see held-response.ts).
      const sleepMs = decided.paused > 0 && decided.delay <= decided.paused ? 0 : decided.delay;
      const holding = result.response === undefined ? undefined : holdForRetry(result.response, clock, callSignal);
      const waited = sleep(clock, sleepMs, callSignal);
      waited.catch(() => {}); // awaited below, once the body is held (so an abort still discards it)
      if (holding !== undefined) held = await holding;
      // The drain is over (at most 64 KiB, 100 ms): its slot ends now, read to the end or not. A body
      // it could not finish is held unread until the retry is sent, without a slot — holding one
      // through the backoff (seconds) would stall every caller, and cancelling the body would cut
      // the response a refused retry gives back; the server may count it a little longer (README).
      endHeldSlot();
      await waited;
    }
  } finally {
    held?.discard();
    endHeldSlot();
    endBudget?.();
  }
}

/** Reserves `cost` on `limiter`, which must support reservations (every built-in limiter does). */
function reserveOn(limiter: Limiter, cost: Cost, options: ScheduleOptions, named: "cost" | "permits"): Promise<Reservation> {
  if (typeof limiter.reserve !== "function") {
    throw new TypeError("`cost`, `settle` and `maxConcurrent` need a limiter with `reserve()` (every sluice limiter has it)");
  }
  const { permits: _, ...rest } = options;
  try {
    return limiter.reserve(cost, rest).catch((error: unknown) => Promise.reject(asCostError(error, named)));
  } catch (error) {
    throw asCostError(error, named);
  }
}

/** A `cost` function's result, checked as `cost` (a `permits` function's is checked by the limiter). */
function checkedCost(value: Cost, named: "cost" | "permits"): Cost {
  return named === "cost" ? checkCostResult(value) : value;
}

/** A hook of the attempt's own (the learned rate's `onChange`) threw: the call fails with `error`. */
class HookFailed {
  readonly error: unknown;
  constructor(error: unknown) {
    this.error = error;
  }
}

/**
 * The runtime's own `fetch`, as it was when this module loaded: it honours its signal, so racing it
 * would only cost a listener and promise hops per attempt (review, 2026-11-27: +10–15 % of sluice's
 * own time for a call made with a `Request`, which always has a signal).
 */
const RUNTIME_FETCH: unknown = globalThis.fetch;

/** A response that came after its attempt was given up (a fetch that ignored the abort): its body is freed. */
function discardLate(late: unknown): void {
  if (isResponse(late)) cancelBody(late);
}
