/** Reservations that settle, and concurrency caps, on every runtime. */
import { combine, ConcurrencyLimiter, ManualClock, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import { expect, track } from "./expect.ts";
import { describe, test } from "./harness.ts";
import { grantedAt } from "./util.ts";

describe("reserve", () => {
  test("named dimensions: a refund of tokens lets the waiting reservation through at once", async () => {
    const clock = new ManualClock();
    const llm = combine({
      requests: new WindowLimiter({ limit: 5, interval: 1000, clock }),
      tokens: new WindowLimiter({ limit: 1000, interval: 1000, clock }),
    });
    const first = await llm.reserve({ requests: 1, tokens: 800 });
    const second = grantedAt(clock, llm.reserve({ requests: 1, tokens: 500 }));
    await clock.advance(100);
    first.settle({ tokens: 200 });
    await clock.advance(0);
    expect(await second).toBe(100);
  });

  test("SmoothLimiter: debt beyond the reservation makes the next caller wait for it", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 1, interval: 100, clock });
    (await limiter.reserve(1)).settle(5);
    const next = grantedAt(clock, limiter.acquire());
    await clock.advance(1000);
    expect(await next).toBe(500);
  });
});

describe("ConcurrencyLimiter", () => {
  test("a slot is held until the task settles; acquire() throws a TypeError", async () => {
    const clock = new ManualClock();
    const limiter = new ConcurrencyLimiter({ limit: 1, clock });
    let finish!: () => void;
    const first = limiter.schedule(() => new Promise<void>((resolve) => (finish = resolve)));
    const second = track(limiter.schedule(() => clock.now()));
    await clock.advance(300);
    expect(second.state).toBe("pending");
    finish();
    await first;
    await clock.advance(0);
    expect(second.value).toBe(300);
    let thrown: unknown;
    try {
      void limiter.acquire();
    } catch (error) {
      thrown = error;
    }
    expect(thrown instanceof TypeError).toBe(true);
  });
});
