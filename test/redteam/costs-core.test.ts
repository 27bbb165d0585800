/**
 * Red team (costs): reservations that settle on every limiter kind, attacked as a demanding user
 * would — README "Reservations that settle" and the JSDoc of `Reservation` read as promises. Every
 * expected grant time below is computed by hand from the algorithm's definition (not read off the
 * implementation). (The DEFECT found here is fixed; its test is a regression test now.)
 */
import { describe, expect, test } from "vitest";
import {
  combine,
  ConcurrencyLimiter,
  FixedWindowLimiter,
  KeyedLimiter,
  ManualClock,
  type Reservation,
  SlidingCounterLimiter,
  SmoothLimiter,
  WindowLimiter,
} from "../../src/index.ts";

/** When (virtual ms) a promise settled, and how. Own helper, not the project's. */
function when<T>(clock: ManualClock, p: Promise<T>): { at?: number; value?: T; error?: unknown } {
  const o: { at?: number; value?: T; error?: unknown } = {};
  p.then((v) => { o.at = clock.now(); o.value = v; }, (e: unknown) => { o.at = clock.now(); o.error = e; });
  return o;
}

type Make = (clock: ManualClock) => {
  reserve(p: number, o?: { signal?: AbortSignal }): Promise<Reservation>;
  acquire(p?: number, o?: { signal?: AbortSignal }): Promise<void>;
};
const KINDS: Record<string, Make> = {
  smooth: (clock) => new SmoothLimiter({ limit: 10, interval: 1000, clock }),
  window: (clock) => new WindowLimiter({ limit: 10, interval: 1000, clock }),
  fixed: (clock) => new FixedWindowLimiter({ limit: 10, interval: 1000, clock }),
  sliding: (clock) => new SlidingCounterLimiter({ limit: 10, interval: 1000, clock }),
  combinePositional: (clock) => combine(new WindowLimiter({ limit: 10, interval: 1000, clock }), new SmoothLimiter({ limit: 10, interval: 1000, clock })),
};

describe("red team costs: bad inputs name the option and the value", () => {
  for (const [kind, make] of Object.entries(KINDS)) {
    test(`${kind}: settle with a negative, NaN, Infinity, fractional or string actual throws and leaves the reservation open`, async () => {
      const clock = new ManualClock();
      const r = await make(clock).reserve(3);
      for (const bad of [-1, Number.NaN, Infinity, -Infinity, 1.5, 2 ** 60]) {
        expect(() => r.settle(bad)).toThrow(RangeError);
        expect(() => r.settle(bad)).toThrow(new RegExp(`\`actual\`.*${String(bad).replace("+", "\\+")}`));
      }
      expect(() => r.settle("2" as never)).toThrow(TypeError);
      expect(() => r.settle("2" as never)).toThrow(/`actual`.*"2"/);
      expect(() => r.settle({ tokens: 1 } as never)).toThrow(TypeError); // no named dimensions here
      expect(r.settled).toBe(false);
      expect(r.settle(1)).toBe(true);
    });

    test(`${kind}: reserve with a negative, NaN, Infinity or fractional permits is refused at once, naming permits`, async () => {
      const clock = new ManualClock();
      const l = make(clock);
      for (const bad of [-1, Number.NaN, Infinity, 0.5]) {
        await expect(async () => l.reserve(bad)).rejects.toThrow(RangeError);
        await expect(async () => l.reserve(bad)).rejects.toThrow(/`permits`/);
      }
    });

    if (kind === "smooth") {
      // Documented (README "Choosing a limiter"): a SmoothLimiter grants any size at once with future
      // debt, so "can never fit" does not apply to it — the next caller pays 11 × 100 ms.
      test("smooth: 11 permits on a 10/s smooth limiter are granted at once as future debt (documented), the next caller pays", async () => {
        const clock = new ManualClock();
        const l = make(clock);
        const r = await l.reserve(11);
        expect(r.grantedAt).toBe(0);
        const next = when(clock, l.acquire(1));
        await clock.advance(5000);
        expect(next.at).toBe(1100);
      });
      continue;
    }
    test(`${kind}: a reservation that can never fit (11 > limit 10) is refused at once with a RangeError, nothing queued`, async () => {
      const clock = new ManualClock();
      const l = make(clock);
      const start = clock.now();
      await expect(async () => l.reserve(11)).rejects.toThrow(RangeError);
      await expect(async () => l.reserve(11)).rejects.toThrow(/11/);
      expect(clock.now()).toBe(start);
      expect(when(clock, l.acquire(10)).at).toBeUndefined(); // granted on the next tick, nothing held
      await clock.advance(0);
    });
  }

  test("named combination: bad per-dimension amounts name the dimension and value; unknown dimensions are TypeErrors", async () => {
    const clock = new ManualClock();
    const llm = combine({ requests: new WindowLimiter({ limit: 5, interval: 1000, clock }), tokens: new WindowLimiter({ limit: 100, interval: 1000, clock }) });
    await expect(async () => llm.reserve({ requests: 1, tokens: 101 })).rejects.toThrow(/`permits\.tokens`.*101/);
    await expect(async () => llm.reserve({ requests: 1, tokens: -5 })).rejects.toThrow(RangeError);
    await expect(async () => llm.reserve({ requests: 1, tokens: -5 })).rejects.toThrow(/`permits\.tokens`.*-5/);
    await expect(async () => llm.reserve({ requests: 1, tokens: Number.NaN })).rejects.toThrow(/`permits\.tokens`.*NaN/);
    await expect(async () => llm.reserve({ requests: 1, tokns: 5 } as never)).rejects.toThrow(TypeError);
    await expect(async () => llm.reserve({ requests: 1, tokns: 5 } as never)).rejects.toThrow(/tokns/);
    const r = await llm.reserve({ requests: 1, tokens: 10 });
    expect(() => r.settle({ tokens: 2.5 })).toThrow(/`actual\.tokens`.*2\.5/);
    expect(() => r.settle({ tokens: Infinity })).toThrow(RangeError);
    expect(() => r.settle({ tokns: 3 } as never)).toThrow(/tokns/);
    expect(r.settled).toBe(false);
    expect(r.settle({})).toBe(true); // every dimension as reserved
  });
});

describe("red team costs: the first of settle/cancel/release wins", () => {
  for (const [kind, make] of Object.entries(KINDS)) {
    test(`${kind}: settle twice, cancel after settle, settle after cancel, release after either: false and nothing changes`, async () => {
      const clock = new ManualClock();
      const l = make(clock);
      const a = await l.reserve(10); // the whole limit
      expect(a.settle(10)).toBe(true);
      expect(a.settle(0)).toBe(false); // a second settle must not refund
      expect(a.cancel()).toBe(false); // nor a cancel after it
      expect(a.release()).toBe(false);
      const next = when(clock, l.acquire(1));
      await clock.advance(0);
      expect(next.at).toBeUndefined(); // still full: none of the late calls gave anything back
      await clock.advance(5000);
      const b = await l.reserve(4);
      expect(b.cancel()).toBe(true);
      expect(b.settle(50)).toBe(false); // settle after cancel records no debt
      expect(b.cancel()).toBe(false);
      const t = clock.now();
      const c = when(clock, l.acquire(1));
      await clock.advance(0);
      // Granted at once unless the limiter is a smooth one still spacing the first permits.
      if (kind === "window" || kind === "fixed" || kind === "sliding") expect(c.at).toBe(t);
    });

    if (kind === "window") test(`${kind}: a settle with a bad value after the reservation was settled returns false (README: later calls return false and change nothing)`, async () => {
      const clock = new ManualClock();
      const r = await make(clock).reserve(2);
      r.settle(1);
      let outcome: unknown;
      try { outcome = r.settle(-1); } catch (e) { outcome = e; }
      expect(outcome).toBe(false);
    });
  }
});

describe("red team costs: debt is never clamped (hand-computed grant times)", () => {
  test("smooth 10/s, burst 0: reserve 1, settle 50 at t=10 → the next permit at 100 + 49·100 = 5000", async () => {
    const clock = new ManualClock();
    const l = new SmoothLimiter({ limit: 10, interval: 1000, clock });
    const r = await l.reserve(1);
    await clock.advanceTo(10);
    r.settle(50);
    const next = when(clock, l.acquire(1));
    await clock.advance(10_000);
    expect(next.at).toBe(5000);
  });

  test("smooth: a debt larger than the limit (1000 permits on a 10/s limiter) blocks for 100 s, not one interval", async () => {
    const clock = new ManualClock();
    const l = new SmoothLimiter({ limit: 10, interval: 1000, clock });
    const r = await l.reserve(10);
    r.settle(1000);
    const next = when(clock, l.acquire(1));
    await clock.advance(200_000);
    expect(next.at).toBe(100_000);
  });

  test("window 10/s: reserve 1 at 0, settle 30 at 10 → the window holds 30 until the debt entry leaves at 1010", async () => {
    const clock = new ManualClock();
    const l = new WindowLimiter({ limit: 10, interval: 1000, clock });
    const r = await l.reserve(1);
    await clock.advanceTo(10);
    r.settle(30);
    await clock.advanceTo(20);
    const next = when(clock, l.acquire(1));
    await clock.advance(5000);
    expect(next.at).toBe(1010);
  });

  test("fixed 10/s: debt counts in the current window; the next permit waits for the next window", async () => {
    const clock = new ManualClock();
    const l = new FixedWindowLimiter({ limit: 10, interval: 1000, clock });
    const r = await l.reserve(1);
    await clock.advanceTo(10);
    r.settle(30);
    const next = when(clock, l.acquire(1));
    await clock.advance(5000);
    expect(next.at).toBe(1000);
  });

  test("sliding counter 10/s: debt 30 in window 0 → 30·(1 − f) + 1 ≤ 10 first at f = 0.7, t = 1700", async () => {
    const clock = new ManualClock();
    const l = new SlidingCounterLimiter({ limit: 10, interval: 1000, clock });
    const r = await l.reserve(1);
    await clock.advanceTo(10);
    r.settle(30);
    const next = when(clock, l.acquire(1));
    await clock.advance(5000);
    expect(next.at).toBe(1700);
  });

  test("debt recorded while waiters queue pushes them later (window 10/s, a waiter for 5 at t=0)", async () => {
    const clock = new ManualClock();
    const l = new WindowLimiter({ limit: 10, interval: 1000, clock });
    const r = await l.reserve(10);
    const waiter = when(clock, l.acquire(5)); // due at 1000 when the grant leaves
    await clock.advanceTo(500);
    r.settle(20); // debt 10 at 500: the window holds it until 1500
    await clock.advance(5000);
    expect(waiter.at).toBe(1500);
  });
});

describe("red team costs: refunds give back at once (hand-computed)", () => {
  test("window: reserve 10 at 0, settle 2 at 100 → 8 more at 100, the 9th only at 1000", async () => {
    const clock = new ManualClock();
    const l = new WindowLimiter({ limit: 10, interval: 1000, clock });
    const r = await l.reserve(10);
    const eight = when(clock, l.acquire(8));
    const ninth = when(clock, l.acquire(1));
    await clock.advanceTo(100);
    r.settle(2);
    await clock.advance(5000);
    expect(eight.at).toBe(100);
    expect(ninth.at).toBe(1000);
  });

  test("fixed: reserve 10 at 0, settle 0 at 999 → 10 more at 999, then 10 at 1000 (as a fixed-window server counts)", async () => {
    const clock = new ManualClock();
    const l = new FixedWindowLimiter({ limit: 10, interval: 1000, clock });
    const r = await l.reserve(10);
    const a = when(clock, l.acquire(10));
    const b = when(clock, l.acquire(10));
    await clock.advanceTo(999);
    r.settle(0);
    await clock.advance(5000);
    expect(a.at).toBe(999);
    expect(b.at).toBe(1000);
  });

  test("smooth: reserve 10 at 0, settle 1 at 50 → the next permit at 100 (as if 1 had been reserved)", async () => {
    const clock = new ManualClock();
    const l = new SmoothLimiter({ limit: 10, interval: 1000, clock });
    const r = await l.reserve(10);
    const next = when(clock, l.acquire(1));
    await clock.advanceTo(50);
    r.settle(1);
    await clock.advance(5000);
    expect(next.at).toBe(100);
  });

  test("a refund on a grant whose window has passed changes nothing (window 10/s: 10 at 0, settle 0 at 1500)", async () => {
    const clock = new ManualClock();
    const l = new WindowLimiter({ limit: 10, interval: 1000, clock });
    const r = await l.reserve(10);
    await clock.advanceTo(1000);
    await l.acquire(10); // 1000: the window (0, 1000] … the grant at 0 left at 1000
    await clock.advanceTo(1500);
    r.settle(0);
    const next = when(clock, l.acquire(1));
    await clock.advance(5000);
    expect(next.at).toBe(2000); // the refund must not free room in the window of the grant at 1000
  });

  test("merged log entries: two reservations at the same instant, one cancelled → only its share comes back", async () => {
    const clock = new ManualClock();
    const l = new WindowLimiter({ limit: 10, interval: 1000, clock });
    const a = await l.reserve(4);
    const b = await l.reserve(6);
    a.cancel();
    const four = when(clock, l.acquire(4));
    const fifth = when(clock, l.acquire(1));
    await clock.advance(5000);
    expect(four.at).toBe(0);
    expect(fifth.at).toBe(1000);
    b.settle();
  });
});

describe("red team costs: never settled counts in full; aborts consume nothing", () => {
  for (const [kind, make] of Object.entries(KINDS)) {
    test(`${kind}: an abort while queued takes nothing — the waiter behind it goes when it would have without it`, async () => {
      const clock = new ManualClock();
      const l = make(clock);
      await l.reserve(10);
      const ac = new AbortController();
      const aborted = when(clock, l.reserve(10, { signal: ac.signal }));
      const behind = when(clock, l.acquire(10));
      await clock.advanceTo(100);
      ac.abort(new Error("user gave up"));
      await clock.advance(0);
      expect((aborted.error as Error).message).toBe("user gave up");
      const control = make(new ManualClock());
      void control;
      await clock.advance(10_000);
      // Without the aborted waiter, 10 more permits fit at the first instant the first 10 are no
      // longer counted: 1000 for every kind here (smooth 10/s from 0; both windows at 1000; the
      // sliding counter only at 2000, when the previous window no longer weighs).
      expect(behind.at).toBe(kind === "sliding" ? 2000 : 1000);
    });
  }
});

describe("red team costs: named combinations settle atomically", () => {
  const make = (clock: ManualClock) => {
    const requests = new WindowLimiter({ limit: 5, interval: 1000, clock });
    const tokensMinute = new WindowLimiter({ limit: 100, interval: 1000, clock });
    const tokensHour = new FixedWindowLimiter({ limit: 150, interval: 10_000, clock });
    return { requests, tokensMinute, tokensHour, llm: combine({ requests, tokens: combine(tokensMinute, tokensHour) }) };
  };

  test("a token refund reaches every member of the tokens dimension; requests settle as reserved", async () => {
    const clock = new ManualClock();
    const { llm, requests, tokensHour } = make(clock);
    const r = await llm.reserve({ requests: 1, tokens: 100 });
    const w = when(clock, llm.reserve({ requests: 1, tokens: 90 }));
    await clock.advanceTo(10);
    r.settle({ tokens: 10 });
    await clock.advance(0);
    expect(w.at).toBe(10); // 10 + 90 = 100 fit the per-second window at once
    // requests: 2 granted, 3 left in this second
    const three = when(clock, requests.acquire(3));
    const fourth = when(clock, requests.acquire(1));
    // tokens per 10 s: 10 + 90 = 100 of 150 → 50 left
    const fifty = when(clock, tokensHour.acquire(50));
    await clock.advance(0);
    expect(three.at).toBe(10);
    expect(fifty.at).toBe(10);
    await clock.advance(5000);
    expect(fourth.at).toBe(1000);
  });

  test("debt on several dimensions at once lands on all of them (requests 3 more, tokens 400 more)", async () => {
    const clock = new ManualClock();
    const { llm, requests, tokensMinute } = make(clock);
    const r = await llm.reserve({ requests: 1, tokens: 50 });
    await clock.advanceTo(10);
    r.settle({ requests: 4, tokens: 450 });
    const req = when(clock, requests.acquire(2)); // 1@0 + 3@10 = 4 of 5 → 2 more once the grant at 0 leaves (1000)
    const tok = when(clock, tokensMinute.acquire(1));
    await clock.advance(0);
    expect(req.at).toBeUndefined();
    expect(tok.at).toBeUndefined();
    await clock.advance(5000);
    expect(req.at).toBe(1000);
    expect(tok.at).toBe(1010); // 50@0 + 400@10: 1 more fits only once the debt leaves
  });

  test("a settle failing validation on one dimension changes no dimension", async () => {
    const clock = new ManualClock();
    const { llm, requests } = make(clock);
    const r = await llm.reserve({ requests: 5, tokens: 100 });
    expect(() => r.settle({ requests: 0, tokens: -1 })).toThrow(RangeError);
    const one = when(clock, requests.acquire(1));
    await clock.advance(0);
    expect(one.at).toBeUndefined(); // the requests refund must not have happened
    expect(r.settled).toBe(false);
  });

  test("a dimension left out of reserve asks 0 and a settle can still charge it as debt", async () => {
    const clock = new ManualClock();
    const { llm, tokensMinute } = make(clock);
    const r = await llm.reserve({ requests: 1 });
    r.settle({ tokens: 100 });
    const one = when(clock, tokensMinute.acquire(1));
    await clock.advance(5000);
    expect(one.at).toBe(1000);
  });

  test("concurrency inside a combination: cancel and settle free the slot, a late second call frees nothing more", async () => {
    const clock = new ManualClock();
    const slots = new ConcurrencyLimiter({ limit: 1, clock });
    const llm = combine({ rate: new SmoothLimiter({ limit: 1000, interval: 1000, clock }), concurrent: slots });
    const a = await llm.reserve({ rate: 1, concurrent: 1 });
    const b = when(clock, llm.reserve({ rate: 1, concurrent: 1 }));
    const c = when(clock, llm.reserve({ rate: 1, concurrent: 1 }));
    await clock.advance(10);
    expect(b.at).toBeUndefined();
    a.settle({ rate: 5 }); // rate debt 4 at t=10 (1000/s, burst 0): the rate is next free at 14
    await clock.advance(10);
    expect(b.at).toBe(14); // the slot came back at 10; the debt on the rate holds b until 14
    expect(a.cancel()).toBe(false); // must not free a second slot
    await clock.advance(10);
    expect(c.at).toBeUndefined();
    (b.value as Reservation).cancel();
    await clock.advance(10);
    expect(c.at).toBe(30);
  });
});

describe("red team costs: KeyedLimiter keeps a key while a reservation on it is open", () => {
  for (const via of ["keyed.reserve", "get(key).reserve"] as const) {
    test(`${via}: the key outlives idleTimeout and maxKeys while open; its debt reaches the key's limiter`, async () => {
      const clock = new ManualClock();
      const keyed = new KeyedLimiter<string, WindowLimiter>({
        create: () => new WindowLimiter({ limit: 1, interval: 1000, clock }),
        idleTimeout: 0,
        maxKeys: 1,
        clock,
      });
      const r = via === "keyed.reserve" ? await keyed.reserve("a", 1) : await keyed.get("a").reserve(1);
      await clock.advanceTo(10_000); // the grant is long out of the window: only the open reservation holds the key
      for (let i = 0; i < 50; i++) await keyed.get(`other${i}`).acquire();
      r.settle(3); // debt at 10 000: the key's window is over its limit until 11 000
      const next = when(clock, keyed.get("a").acquire());
      await clock.advance(5000);
      expect(next.at).toBe(11_000);
    });
  }
});

describe("red team costs: setLimit after a settle re-prices the last grant at its actual cost", () => {
  test("smooth 10/s: reserve 10 at 0, settle 1, setLimit 1/s → the next permit at 1000 (1 permit × 1 s), not 10 000", async () => {
    const clock = new ManualClock();
    const l = new SmoothLimiter({ limit: 10, interval: 1000, clock });
    const r = await l.reserve(10);
    r.settle(1);
    l.setLimit({ limit: 1 });
    const next = when(clock, l.acquire(1));
    await clock.advance(20_000);
    expect(next.at).toBe(1000);
  });

  test("smooth 10/s: reserve 10 at 0, unsettled, setLimit 1/s → the next permit at 10 000", async () => {
    const clock = new ManualClock();
    const l = new SmoothLimiter({ limit: 10, interval: 1000, clock });
    await l.reserve(10);
    l.setLimit({ limit: 1 });
    const next = when(clock, l.acquire(1));
    await clock.advance(20_000);
    expect(next.at).toBe(10_000);
  });
});

describe("red team costs: sliding counter refunds in the previous window", () => {
  test("reserve 5 at 900 (window 0), 1 granted at 1000, 8 waiting (due at 1800); cancel the 5 at 1200 → the 8 go at 1200", async () => {
    const clock = new ManualClock();
    const l = new SlidingCounterLimiter({ limit: 10, interval: 1000, clock });
    await clock.advanceTo(900);
    const r = await l.reserve(5);
    await clock.advanceTo(1000);
    const one = when(clock, l.acquire(1));
    const eight = when(clock, l.acquire(8));
    await clock.advance(0);
    expect(one.at).toBe(1000); // 5·1.0 + 0 + 1 ≤ 10
    expect(eight.at).toBeUndefined(); // 5·(1 − f) + 1 + 8 ≤ 10 only from f = 0.8
    await clock.advanceTo(1200);
    r.cancel(); // the previous window's 5 no longer weigh
    await clock.advance(0);
    expect(eight.at).toBe(1200);
  });
});
