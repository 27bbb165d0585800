/**
 * The reference model of the Redis scripts, built on the in-memory policies (`SmoothPolicy`,
 * `WindowPolicy`) in microseconds. It states the reservation semantics in plain TypeScript:
 *
 * - reserve: `at = ceil(max_i earliest_i(n, now))`, where a strict window also waits for its newest
 *   reservation (FIFO); refuse (take nothing) when `at − now > maxWait`, or when a key already holds
 *   `maxPending` outstanding reservations; else `take(n, at)` on every key and record the grant.
 * - cancel: idempotent by id (tombstone). A window forgets the reservation exactly. A smooth key
 *   restores its state from before the reservation when it is the newest one (a cancelled middle
 *   reservation hands its before-state to its successor, so a cancelled suffix is reclaimed whole),
 *   re-applying any pause.
 * - pause: nothing granted on the keys before `now + d`.
 * - named dimensions: a request may ask one amount per key (`n` a list); a key asked 0 takes no
 *   part (no earliest, no queue-full check, no take, no entry), and a settle adjusts each key by its
 *   own `actual_i − n_i`.
 * - settle (a reservation reserved to settle): the first of settle and cancel wins. Each key is
 *   adjusted by `delta = actual − n` with the in-memory semantics: a smooth key calls
 *   `SmoothPolicy.adjust` with the mark taken at the grant (then sets its barrier: no cancel restores
 *   a state from before the settle); a window takes a refund off the reservation's own entry while it
 *   is in the window and records debt as an entry at `now`, in time order.
 *
 * The differential test drives this model and the Lua scripts with the same random operations and
 * requires identical replies.
 */
import { SmoothPolicy } from "../../src/limiters/smooth.ts";
import { WindowPolicy } from "../../src/limiters/window.ts";

export interface RefSpec {
  readonly kind: "s" | "w";
  readonly key: string;
  readonly limit: number;
  readonly intervalUs: number;
  readonly burst: number;
  readonly initial: number;
}

export interface RefReply {
  readonly code: number;
  readonly delay: number;
  readonly at: number;
}

interface QueueEntry {
  readonly id: string;
  readonly seq: number;
  readonly g: number;
  before: SmoothPolicy;
}

class SmoothKey {
  policy: SmoothPolicy | null = null;
  p: number | null = null;
  s = 0;
  bar = 0;
  l = "";
  lb: SmoothPolicy | null = null;
  q: QueueEntry[] = [];

  load(spec: RefSpec, now: number): SmoothPolicy {
    return (this.policy ??= new SmoothPolicy(spec.limit, spec.intervalUs, spec.burst, spec.initial, now));
  }

  restore(before: SmoothPolicy): void {
    this.policy = before.clone(0);
    if (this.p !== null) this.policy.pause(this.p);
  }
}

class WindowKey {
  entries: { t: number; n: number; id: string }[] = [];
  p: number | null = null;

  trim(spec: RefSpec, now: number): void {
    this.entries = this.entries.filter((e) => e.t + spec.intervalUs > now);
  }

  /** The in-memory WindowPolicy holding exactly the live reservations. */
  policy(spec: RefSpec): WindowPolicy {
    const policy = new WindowPolicy(spec.limit, spec.intervalUs);
    for (const e of this.entries) policy.take(e.n, e.t);
    if (this.p !== null) policy.pause(this.p);
    return policy;
  }
}

export interface RefOptions {
  readonly maxPending: number;
  /** ms */
  readonly grace: number;
}

/** A reservation's record: grant time, permits, and (reserved to settle) each key's mark. */
interface Rec {
  readonly g: number;
  /** What was reserved: a number of every key, or one per key (named dimensions). */
  readonly n: number | readonly number[];
  readonly marks: readonly number[] | null;
  settled: boolean;
}

/** The amount of key `i`: a number of every key, or one per key (named dimensions). */
function amountAt(n: number | readonly number[], i: number): number {
  return typeof n === "number" ? n : n[i]!;
}

/** What a cancel or settle reply reports: the amount reserved, summed over the dimensions. */
function total(n: number | readonly number[]): number {
  return typeof n === "number" ? n : n.reduce((a, b) => a + b, 0);
}

const CODE = { none: 0, ok: 1, wait: 2, full: 3, cancelled: 4, replay: 5 } as const;
const PRUNE_LIMIT = 128;

/** The whole family's state: keys and reservation records. */
export class ReferenceStore {
  readonly #smooth = new Map<string, SmoothKey>();
  readonly #window = new Map<string, WindowKey>();
  readonly #records = new Map<string, Rec | "x">();
  readonly #options: RefOptions;

  constructor(options: RefOptions) {
    this.#options = options;
  }

  #s(spec: RefSpec): SmoothKey {
    let k = this.#smooth.get(spec.key);
    if (k === undefined) this.#smooth.set(spec.key, (k = new SmoothKey()));
    return k;
  }

  #w(spec: RefSpec): WindowKey {
    let k = this.#window.get(spec.key);
    if (k === undefined) this.#window.set(spec.key, (k = new WindowKey()));
    return k;
  }

  reserve(
    specs: readonly RefSpec[],
    id: string,
    n: number | readonly number[],
    maxWait: number,
    now: number,
    settles = false,
  ): RefReply {
    const rec = this.#records.get(id);
    if (rec === "x") return { code: CODE.cancelled, delay: 0, at: 0 };
    if (rec !== undefined) return { code: CODE.replay, delay: Math.max(0, rec.g - now), at: rec.g };
    let at = now;
    const graceUs = this.#options.grace * 1000;
    for (let i = 0; i < specs.length; i++) {
      const spec = specs[i]!;
      const ni = amountAt(n, i);
      let e: number;
      if (spec.kind === "s") {
        const key = this.#s(spec);
        const policy = key.policy ?? new SmoothPolicy(spec.limit, spec.intervalUs, spec.burst, spec.initial, now);
        let pruned = 0;
        while (key.q.length > 0 && pruned < PRUNE_LIMIT && key.q[0]!.g + graceUs <= now) {
          key.q.shift();
          pruned++;
        }
        if (ni === 0) continue; // a dimension asked nothing: the key takes no part
        e = policy.earliest(ni, now);
      } else {
        const key = this.#w(spec);
        key.trim(spec, now);
        if (ni === 0) continue;
        e = key.policy(spec).earliest(ni, now);
        const last = key.entries.at(-1);
        if (last !== undefined && last.t > e) e = last.t;
      }
      if (e > at) at = e;
    }
    at = Math.ceil(at);
    const delay = at - now;
    if (delay > maxWait) return { code: CODE.wait, delay, at };
    if (delay > 0) {
      for (let i = 0; i < specs.length; i++) {
        const spec = specs[i]!;
        if (amountAt(n, i) === 0) continue;
        const full = spec.kind === "s"
          ? this.#s(spec).q.length >= this.#options.maxPending
          : this.#w(spec).entries.length >= spec.limit + this.#options.maxPending;
        if (full) return { code: CODE.full, delay, at };
      }
    }
    for (let i = 0; i < specs.length; i++) {
      const spec = specs[i]!;
      const ni = amountAt(n, i);
      if (ni === 0) continue;
      if (spec.kind === "s") {
        const key = this.#s(spec);
        const policy = key.load(spec, now);
        const before = policy.clone(0);
        policy.take(ni, at);
        key.s++;
        if (delay > 0) key.q.push({ id, seq: key.s, g: at, before });
        else if (key.q.length > 0) key.bar = key.s;
        key.l = id;
        key.lb = before;
      } else {
        this.#w(spec).entries.push({ t: at, n: ni, id });
      }
    }
    // a smooth key that took no part may have no state yet: its mark is what a new state starts from
    const marks = settles ? specs.map((spec) => (spec.kind === "s" ? this.#s(spec).policy?.mark() ?? 0 : 0)) : null;
    this.#records.set(id, { g: at, n, marks, settled: false });
    return { code: CODE.ok, delay, at };
  }

  cancel(specs: readonly RefSpec[], id: string): RefReply {
    const rec = this.#records.get(id);
    if (rec === "x" || rec?.settled === true) return { code: CODE.none, delay: 0, at: 0 };
    this.#records.set(id, "x");
    if (rec === undefined) return { code: CODE.none, delay: 0, at: 0 };
    for (let k = 0; k < specs.length; k++) {
      const spec = specs[k]!;
      if (amountAt(rec.n, k) === 0) continue;
      if (spec.kind === "s") {
        const key = this.#s(spec);
        if (key.policy === null) continue;
        const i = key.q.findIndex((e) => e.id === id);
        if (i !== -1) {
          const r = key.q[i]!;
          const next = key.q[i + 1];
          if (next === undefined) {
            if (r.seq > key.bar) {
              key.restore(r.before);
              if (key.l === id) {
                key.l = "";
                key.lb = null;
              }
            }
          } else if (!(r.seq <= key.bar && next.seq > key.bar)) {
            next.before = r.before;
          }
          key.q.splice(i, 1);
        } else if (key.l === id && key.lb !== null) {
          key.restore(key.lb);
          key.l = "";
          key.lb = null;
        }
      } else {
        const key = this.#w(spec);
        const i = key.entries.findIndex((e) => e.id === id && e.t === rec.g && e.n === amountAt(rec.n, k));
        if (i !== -1) key.entries.splice(i, 1);
      }
    }
    return { code: CODE.ok, delay: total(rec.n), at: rec.g };
  }

  /** Which branches the latest settle took (for the differential test's reach counts). */
  settleBranches: Set<string> = new Set();

  settle(specs: readonly RefSpec[], id: string, actual: number | readonly number[], now: number): RefReply {
    this.settleBranches = new Set();
    const rec = this.#records.get(id);
    if (rec === undefined || rec === "x" || rec.settled || rec.marks === null) return { code: CODE.none, delay: 0, at: 0 };
    rec.settled = true;
    specs.forEach((spec, i) => {
      const n = amountAt(rec.n, i);
      const a = amountAt(actual, i);
      const delta = a - n;
      if (delta === 0) return;
      if (spec.kind === "s") {
        const key = this.#s(spec);
        if (key.policy === null && delta < 0) return;
        const policy = key.load(spec, now);
        const next = policy.nextFree();
        policy.adjust(delta, rec.g, rec.marks![i]!, now);
        if (delta < 0 && policy.nextFree() !== next + (delta * spec.intervalUs) / spec.limit) {
          this.settleBranches.add("smooth refund bounded by the grants since");
        }
        if (key.q.length > 0) this.settleBranches.add("smooth settle behind queued reservations (barrier)");
        if (key.q.length > 0) key.bar = key.s;
        key.l = "";
        key.lb = null;
      } else {
        const key = this.#w(spec);
        if (delta < 0) {
          if (rec.g + spec.intervalUs <= now) {
            this.settleBranches.add("window refund after the entry left the window");
            return;
          }
          const j = key.entries.findIndex((e) => e.id === id && e.t === rec.g && e.n === n);
          if (j === -1) return;
          if (a === 0) key.entries.splice(j, 1);
          else key.entries[j] = { t: rec.g, n: a, id };
        } else {
          let j = key.entries.length;
          while (j > 0 && key.entries[j - 1]!.t > now) j--;
          if (j < key.entries.length) this.settleBranches.add("window debt before booked entries");
          key.entries.splice(j, 0, { t: now, n: delta, id: `${id}+` });
        }
      }
    });
    return { code: CODE.ok, delay: total(rec.n), at: rec.g };
  }

  pause(specs: readonly RefSpec[], durationUs: number, now: number): RefReply {
    const until = now + durationUs;
    for (const spec of specs) {
      if (spec.kind === "s") {
        const key = this.#s(spec);
        const policy = key.load(spec, now);
        if (key.p === null || until > key.p) key.p = until;
        policy.pause(until);
      } else {
        const key = this.#w(spec);
        if (key.p === null || until > key.p) key.p = until;
      }
    }
    return { code: CODE.ok, delay: durationUs, at: until };
  }
}
