/**
 * An LLM profile's budgets per model. Each dimension (requests, tokens, …) is two limiters granted
 * together: a strict one-minute `WindowLimiter` holding the configured limit, settled down to `usage`,
 * and a {@link ServerBudget} mirroring what the server's headers say it has left. The members outlive
 * the per-key combinations (a `KeyedLimiter` may evict those).
 *
 * **Header correction** (notes/vendors.md §4.3 step 5): when a response reports `remaining`, the
 * mirror is set to `remaining − what our requests sent after it reserved` — those the server had not
 * counted when it answered — and refills from there until full at the reported reset (OpenAI and
 * Anthropic: the time until the budget is fully replenished). Which requests were sent after a
 * response's request is known from the order of grants: the first dimension (requests: every call
 * asks 1) notes, at each grant, how much every mirror had taken before it. Requests are assumed to
 * reach the server in the order they were sent. Only the newest information counts: a response to a
 * request sent before one already applied changes nothing.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { anySignal } from "../http/timers.ts";
import { CombinedLimiter, combine } from "../limiters/combine.ts";
import { ConcurrencyLimiter } from "../limiters/concurrency.ts";
import { KeyedLimiter } from "../limiters/keyed.ts";
import type { GatedLimiter } from "../limiters/limiter.ts";
import type { Permits, Reservation, ReserveOptions } from "../limiters/reservation.ts";
import { WindowLimiter } from "../limiters/window.ts";
import { MINUTE } from "./profile.ts";
import { ServerBudget } from "./server-budget.ts";
import type { VendorBudget } from "./types.ts";

/** How much every mirror had taken just before a grant: its place among the model's grants. */
interface Place {
  readonly seq: number;
  readonly at: number;
  readonly taken: Readonly<Record<string, number>>;
}

/** A reservation of a call: what it asked, and where it was granted. */
interface Grant {
  readonly place: Place;
  readonly amounts: Readonly<Record<string, number>>;
}

/** A reservation still queued, which a lowered limit may show can never fit. */
interface Pending {
  readonly amounts: Readonly<Record<string, number>>;
  readonly controller: AbortController;
}

/** One model's limiters and bookkeeping. */
class Model<D extends string> {
  readonly windows = {} as Record<D, WindowLimiter>;
  readonly mirrors = {} as Record<D, ServerBudget>;
  readonly dimensions = {} as Record<D, GatedLimiter>;
  readonly pending = new Set<Pending>();
  /** Its `concurrent` slots, with `maxConcurrent`. */
  slots: ConcurrencyLimiter | undefined = undefined;
  /** Places of grants not yet claimed by their reservation, oldest first from `head`. */
  places: Place[] = [];
  head = 0;
  seq = 0;
  /** `seq` of the newest grant whose response's headers were applied. */
  synced = 0;
}

/** Models kept before a new one first forgets the idle ones; then twice as many as were left. */
const MIN_SWEEP = 64;

/** A grant whose reservation never claimed its place (made outside the profile) is dropped after this. */
const PLACE_TTL = 2 * MINUTE;

/** Reserves `permits` through the budgets, which call `reserve` (the combination's own). */
type ReserveThrough = (
  permits: Permits,
  options: ReserveOptions | undefined,
  reserve: (options: ReserveOptions) => Promise<Reservation>,
) => Promise<Reservation>;

/**
 * A model's combination: reserves through {@link ModelBudgets} so it can note each grant's place
 * and refuse, once the server reports a lower limit, a queued reservation that can never fit. @internal
 */
class ModelLimiter extends CombinedLimiter {
  readonly #reserve: ReserveThrough;

  constructor(members: Readonly<Record<string, GatedLimiter>>, reserve: ReserveThrough) {
    super(members);
    this.#reserve = reserve;
  }

  override reserve(permits: Permits = 1, options?: ReserveOptions): Promise<Reservation> {
    return this.#reserve(permits, options, (o) => super.reserve(permits, o));
  }
}

/**
 * Budgets per model (see the module note).
 *
 * @example
 * ```ts
 * const budgets = new ModelBudgets(() => ({ requests: 500, tokens: 200_000 }), undefined);
 * await budgets.keyed.get("gpt-4o-mini").reserve({ requests: 1, tokens: 1500 });
 * ```
 */
export class ModelBudgets<D extends string> {
  readonly #limits: (model: string) => Readonly<Record<D, number>>;
  readonly #clock: Clock | undefined;
  readonly #maxConcurrent: number | undefined;
  readonly #models = new Map<string, Model<D>>();
  /** What each call's `cost` returned. */
  readonly #costs = new WeakMap<Request, object>();
  /** The call of each cost record the fetch reserves (its own frozen copy of what `cost` returned). */
  readonly #calls = new WeakMap<object, Request>();
  /** The call whose key was asked last: the fetch asks a call's key just before its first reserve. */
  #keyed: Request | undefined = undefined;
  readonly #grants = new WeakMap<Request, Grant>();
  readonly keyed: KeyedLimiter<string>;
  /** The number of models at which the next new one first forgets those at rest (see `#forgetIdle`). */
  #sweepAt = MIN_SWEEP;

  /**
   * @param limits each model's limits by dimension; the first dimension must be asked ≥ 1 by every
   *   reservation (requests), since its grants order the header correction.
   * @param maxConcurrent when given, each model's combination also holds a `concurrent` dimension:
   *   a slot from the grant until the reservation settles — for a settled call, once its usage is
   *   read, i.e. its body is done.
   */
  constructor(limits: (model: string) => Readonly<Record<D, number>>, clock: Clock | undefined, maxConcurrent?: number) {
    this.#limits = limits;
    this.#clock = clock;
    this.#maxConcurrent = maxConcurrent;
    this.keyed = new KeyedLimiter<string>({
      // The combination holds its model: a combination the KeyedLimiter revives (evicted, but still
      // held by a caller) brings its model back with it (see `#reserve`).
      create: (name) => {
        const model = this.#model(name);
        return new ModelLimiter(this.#slotted(model), (permits, options, reserve) => this.#reserve(name, model, permits, options, reserve));
      },
      ...(clock === undefined ? {} : { clock }),
    });
  }

  /** The cost of the `concurrent` dimension: 1 when `maxConcurrent` was given, else nothing. */
  get slot(): { concurrent?: number } {
    return this.#maxConcurrent === undefined ? {} : { concurrent: 1 };
  }

  /** Notes that `cost` is what `request` reserves (call it from the profile's `cost`). */
  costOf<C extends object>(request: Request, cost: C): C {
    this.#costs.set(request, cost);
    return cost;
  }

  /** Notes that the fetch asked `request`'s key (call it from the profile's `key`): its reserve comes next. */
  keyOf(request: Request, key: string): string {
    this.#keyed = request;
    return key;
  }

  /**
   * The call reserving `amounts`: known from an earlier attempt, else the call whose key was just
   * asked, when what its `cost` returned is what is reserved (the fetch reserves a frozen copy).
   */
  #callOf(amounts: Readonly<Record<string, number>>): Request | undefined {
    const known = this.#calls.get(amounts);
    if (known !== undefined) return known;
    const request = this.#keyed;
    this.#keyed = undefined;
    const cost = request === undefined ? undefined : this.#costs.get(request) as Record<string, unknown> | undefined;
    if (cost === undefined) return undefined;
    const names = Object.keys(cost);
    if (names.length !== Object.keys(amounts).length || names.some((name) => cost[name] !== amounts[name])) return undefined;
    this.#calls.set(amounts, request!);
    return request;
  }

  #slotted(model: Model<D>): Record<string, GatedLimiter> {
    const dimensions: Record<string, GatedLimiter> = { ...model.dimensions };
    if (this.#maxConcurrent === undefined) return dimensions;
    model.slots ??= new ConcurrencyLimiter({ limit: this.#maxConcurrent, ...(this.#clock === undefined ? {} : { clock: this.#clock }) });
    return { ...dimensions, concurrent: model.slots };
  }

  /** Models whose budgets are kept (a test's view). @internal */
  get models(): number {
    return this.#models.size;
  }

  /**
   * Forgets every model at rest: no combination of it left in `keyed` (evicted, so no reservation
   * open), nothing queued, and every member as a fresh one would be (its window empty, its mirror
   * full, its slots free) — so a model made again later lets through no more than this one would.
   * If the KeyedLimiter revives the evicted combination instead (a caller still held it), its model
   * comes back with it at its first reservation (see `#reserve`).
   * Without this, each distinct `model` name (a fine-tuned model per job, or one a client chose)
   * kept its budgets for good: about 8 KB each.
   */
  #forgetIdle(): void {
    for (const [name, model] of this.#models) {
      if (this.keyed.peek(name) !== undefined || model.pending.size > 0) continue;
      const members = Object.keys(model.windows) as D[];
      if (!members.every((d) => model.windows[d].isIdle() && model.mirrors[d].isIdle())) continue;
      if (!(model.slots?.isIdle() ?? true)) continue;
      this.#models.delete(name);
    }
    this.#sweepAt = Math.max(MIN_SWEEP, 2 * this.#models.size);
  }

  #model(name: string): Model<D> {
    let model = this.#models.get(name);
    if (model !== undefined) return model;
    if (this.#models.size >= this.#sweepAt) this.#forgetIdle();
    model = new Model<D>();
    const clock = this.#clock === undefined ? {} : { clock: this.#clock };
    const dimensions = Object.entries(this.#limits(name)) as [D, number][];
    for (const [dimension, limit] of dimensions) {
      const window = new WindowLimiter({ limit, interval: MINUTE, ...clock });
      const mirror = new ServerBudget(this.#clock);
      model.windows[dimension] = window;
      model.mirrors[dimension] = mirror;
      model.dimensions[dimension] = combine(window, mirror);
    }
    const m = model;
    const mirrors = dimensions.map(([d]) => [d, m.mirrors[d].policy] as const);
    // The first dimension's take comes first in each grant (its policies lead the combination):
    // before it, every mirror's count is the grant's place.
    m.mirrors[dimensions[0]![0]].policy.onTake = (_, at) => {
      const taken: Record<string, number> = {};
      for (const [d, policy] of mirrors) taken[d] = policy.taken;
      while (m.head < m.places.length && m.places[m.head]!.at < at - PLACE_TTL) m.head++;
      if (m.head > 1024 && m.head * 2 > m.places.length) {
        m.places = m.places.slice(m.head);
        m.head = 0;
      }
      m.places.push({ seq: ++m.seq, at, taken });
    };
    this.#models.set(name, model);
    return model;
  }

  #reserve(
    name: string,
    model: Model<D>,
    permits: Permits,
    options: ReserveOptions | undefined,
    reserve: (options: ReserveOptions) => Promise<Reservation>,
  ): Promise<Reservation> {
    // A revived combination's model is the name's again: `learn` and `sync` must reach the budgets
    // that reservations go through, not a fresh model made while it was evicted.
    if (this.#models.get(name) !== model) this.#models.set(name, model);
    const amounts = typeof permits === "object" && permits !== null ? permits : undefined;
    if (amounts === undefined) return reserve(options ?? {});
    const request = this.#callOf(amounts);
    const controller = new AbortController();
    const pending: Pending = { amounts, controller };
    const given = options?.signal;
    // anySignal, not AbortSignal.any: Node 20.0–20.2 and older browsers lack it (red-team, 2026-11-27).
    const signal = given === undefined || given === null ? controller.signal : anySignal([given, controller.signal])!;
    model.pending.add(pending);
    let granted: Promise<Reservation>;
    try {
      granted = reserve({ ...options, signal });
    } catch (error) {
      model.pending.delete(pending);
      throw error;
    }
    return granted.then((reservation) => {
      model.pending.delete(pending);
      const place = this.#claim(model, reservation.grantedAt);
      if (request !== undefined && place !== undefined) this.#grants.set(request, { place, amounts });
      return reservation;
    }, (error: unknown) => {
      model.pending.delete(pending);
      throw error;
    });
  }

  /** The place of the grant made at `at`: grants are claimed in the order they were made. */
  #claim(model: Model<D>, at: number): Place | undefined {
    while (model.head < model.places.length) {
      const place = model.places[model.head]!;
      if (place.at > at) return undefined;
      model.head++;
      if (place.at === at) return place;
    }
    return undefined;
  }

  /** The limit in force of `dimension` for model `name`: its window's (lowered by `learn`), or the configured one. */
  limitOf(name: string, dimension: D): number {
    return this.#models.get(name)?.windows[dimension]?.limit ?? this.#limits(name)[dimension];
  }

  /**
   * A budget the server reports lower than ours is lowered to match (never raised: a configured
   * budget below the server's is the caller's choice, e.g. to leave room for another client).
   * Queued reservations of this profile that ask more than the new limit fail at once with a
   * RangeError (they could never be granted), so the lowering never fails — nor does the response
   * that reported it.
   */
  learn(name: string, dimension: D, reported: number | undefined): void {
    const model = this.#models.get(name);
    if (reported === undefined || reported < 1 || model === undefined) return;
    const window = model.windows[dimension];
    if (window === undefined || reported >= window.limit) return;
    for (const pending of [...model.pending]) {
      const asked = pending.amounts[dimension];
      if (typeof asked === "number" && asked > reported) {
        pending.controller.abort(new RangeError(
          `\`cost.${dimension}\` must be at most ${reported} for model ${JSON.stringify(name)} (the server reports that limit per minute), got ${asked}`,
        ));
      }
    }
    try {
      window.setLimit({ limit: reported });
    } catch {
      // A queued request made on the profile's limiter directly (not through its fetch) is larger:
      // it keeps the limit until it is granted; never fail the response that reported it.
    }
  }

  /**
   * Applies what a response of `request` (on model `name`) reports as remaining, per dimension (see
   * the module note). A request whose grant is unknown (reserved outside the profile's limiter), or
   * sent before one whose headers were already applied, changes nothing.
   */
  sync(name: string, request: Request, reported: Readonly<Partial<Record<D, VendorBudget>>>): void {
    const model = this.#models.get(name);
    const grant = this.#grants.get(request);
    if (model === undefined || grant === undefined || grant.place.seq <= model.synced) return;
    model.synced = grant.place.seq;
    for (const dimension of Object.keys(model.mirrors) as D[]) {
      const budget = reported[dimension];
      if (budget?.remaining === undefined) continue;
      const mirror = model.mirrors[dimension];
      // Taken after this request's grant: sent after it, so not counted in `remaining` yet.
      const uncounted = Math.max(0, mirror.policy.taken - (grant.place.taken[dimension] ?? 0) - (grant.amounts[dimension] ?? 0));
      const capacity = budget.limit ?? Math.max(budget.remaining, model.windows[dimension].limit);
      const missing = capacity - budget.remaining;
      // Reset = the time until the budget is full again: the refill rate the server reports.
      const rate = budget.resetMs !== undefined && budget.resetMs > 0 && missing > 0 ? missing / budget.resetMs : capacity / MINUTE;
      mirror.sync({ level: budget.remaining - uncounted, capacity, rate });
    }
  }
}
