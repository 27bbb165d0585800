import { describe, expect, test } from "vitest";
import { combine, ManualClock, MaxWaitExceededError, WindowLimiter } from "../../src/index.ts";
import { track } from "../helpers.ts";

describe("predictions (tryAcquire hints, maxWait) count waiters on other channels", () => {
  /** A waiter on a channel, due at t=1000 when its channel frees, will take the shared limit first. */
  async function layout() {
    const clock = new ManualClock();
    const overall = new WindowLimiter({ limit: 2, interval: 1000, clock });
    const channel = combine(overall, new WindowLimiter({ limit: 1, interval: 1000, clock }));
    await channel.acquire(); // t=0: overall 1 of 2, the channel full until t=1000
    await clock.advance(500);
    const onChannel = track(clock, channel.acquire());
    return { clock, overall, onChannel };
  }

  test("tryAcquire's hint is the real wait, even with nobody queued on the limiter asked", async () => {
    const { clock, overall, onChannel } = await layout();
    expect(overall.tryAcquire(2)).toBe(1500);
    const direct = track(clock, overall.acquire(2));
    await clock.advance(2000);
    expect(onChannel.at).toBe(1000);
    expect(direct.at).toBe(2000);
  });

  test("maxWait rejects up front when the real wait exceeds it", async () => {
    const { clock, overall } = await layout();
    const direct = track(clock, overall.acquire(2, { maxWait: 600 }));
    await clock.advance(0);
    expect(direct.error).toBeInstanceOf(MaxWaitExceededError);
    expect((direct.error as MaxWaitExceededError).retryAfter).toBe(1500);
  });
});
