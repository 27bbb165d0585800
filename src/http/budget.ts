/**
 * RetryBudget: bounds retries across all callers, so a failing server is not hit by N× load.
 *
 * A token bucket in the style of Finagle's retry budget and gRPC's retry throttling, without a
 * clock: every call deposits `ratio` tokens, every retry withdraws one, and a retry is allowed only
 * while a whole token is left. At most `max(reserve, 1)` tokens are held, plus `ratio` for each call
 * of a throttled fetch still in progress: 200 calls made at once hold room for 10 + 40 retries, not 10
 * (their deposits all land before any retry; a cap of the reserve alone threw them away). A
 * `deposit()` of your own holds no such room. So over any stretch of time,
 *
 *     retries ≤ reserve + ratio × calls
 *
 * — with the defaults (0.2, 10), at most 20 % more requests than calls, plus 10 for a quiet client
 * whose first calls fail. Healthy traffic refills the budget; a storm drains it and then only every
 * fifth failure is retried. Tokens are kept as integer millionths, the ratio rounded down to one,
 * so the bound is exact (no floating-point drift over millions of calls, and never one retry over).
 *
 * Retries the server timed (429, or 503 with Retry-After) do not spend the budget: they wait for
 * the server's time through the shared, paused limiter, which already bounds their rate.
 *
 * @module
 */
import { HTTP_DEFAULTS } from "./defaults.ts";
import { keysOf, nonNegativeFinite, nonNegativeInteger, onlyKnown, optionsObject } from "../validate.ts";

const SCALE = 1_000_000;

/**
 * Options of {@link RetryBudget}.
 *
 * @example
 * ```ts
 * const options: RetryBudgetOptions = { ratio: 0.1, reserve: 5 };
 * ```
 */
export interface RetryBudgetOptions {
  /** Tokens each call earns; retries stay within this share of calls. @default 0.2 */
  ratio?: number;
  /** Tokens at the start and at most (at least 1 is held): retries a quiet client may make. @default 10 */
  reserve?: number;
}

/**
 * A retry budget that one or several throttled fetches share (pass the same instance as
 * `retry.budget`).
 *
 * @example
 * ```ts
 * import { createThrottledFetch, RetryBudget, SmoothLimiter } from "sluice";
 * const budget = new RetryBudget({ ratio: 0.1, reserve: 5 });
 * const limiter = new SmoothLimiter({ limit: 10 });
 * const a = createThrottledFetch({ limiter, retry: { budget } });
 * const b = createThrottledFetch({ limiter, retry: { budget } }); // retries of a and b share it
 * ```
 */
export class RetryBudget {
  readonly #ratio: number;
  /** The most tokens held: the reserve, but at least one whole token so a ratio alone can retry. */
  readonly #capacity: number;
  #tokens: number;
  /** Fetch calls in progress (see {@link RetryBudget.start}): each holds room for its `ratio`. */
  #open = 0;

  /** Creates a budget; share one instance between throttled fetches to bound their retries together. */
  constructor(options?: RetryBudgetOptions) {
    const o = optionsObject("options", options);
    onlyKnown("RetryBudget", o, keysOf<RetryBudgetOptions>()("ratio", "reserve"));
    const ratio = nonNegativeFinite("ratio", o.ratio ?? HTTP_DEFAULTS.retry.budget.ratio);
    const reserve = nonNegativeInteger("reserve", o.reserve ?? HTTP_DEFAULTS.retry.budget.reserve);
    // Down, not to the nearest: a ratio rounded up (0.4999997 → 0.5) would let two calls earn a retry
    // the bound does not allow. But a product that is a whole number up to float error
    // (0.0157 × 1e6 = 15699.999…) is that number, or 115 of the 9,999 four-decimal ratios would
    // lose a millionth (review, 2026-11-27).
    const scaled = ratio * SCALE;
    this.#ratio = Math.abs(scaled - Math.round(scaled)) < 1e-6 ? Math.round(scaled) : Math.floor(scaled);
    this.#capacity = Math.max(reserve, 1) * SCALE;
    this.#tokens = reserve * SCALE;
  }

  /** Whole retries available right now. */
  get available(): number {
    return Math.floor(this.#tokens / SCALE);
  }

  /** Records a call (its first attempt): earns `ratio` tokens, up to `max(reserve, 1)` (plus the room of the fetch calls in progress). */
  deposit(): void {
    this.#tokens = Math.min(this.#cap(), this.#tokens + this.#ratio);
  }

  /**
   * @internal A throttled fetch's call in progress: deposits, and holds room for its tokens until the
   * returned `end` is called (once; later calls do nothing) — so calls made together keep what they
   * earned (200 at once: 10 + 40 retries, not 10).
   */
  start(): () => void {
    this.#open++;
    this.deposit();
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#open--;
      this.#tokens = Math.min(this.#cap(), this.#tokens);
    };
  }

  #cap(): number {
    return this.#capacity + this.#ratio * this.#open;
  }

  /** Takes one token for a retry; `false` (and nothing taken) when less than one is left. */
  tryWithdraw(): boolean {
    if (this.#tokens < SCALE) return false;
    this.#tokens -= SCALE;
    return true;
  }
}
