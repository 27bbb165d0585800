/**
 * Faults against a real redis-server, in real time (the point is real sockets and real stalls):
 * SCRIPT FLUSH mid-run, a server killed and restarted on the same port, CLIENT PAUSE longer than the
 * per-call timeout. Each ends in the documented policy, with no lost or double permits.
 */
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, expect, test, vi } from "vitest";
import {
  fromIoredis,
  RedisCommandError,
  type RedisErrorEvent,
  RedisStore,
  type RedisStoreOptions,
  RedisSmoothLimiter,
  RedisUnavailableError,
  RedisWindowLimiter,
} from "../../src/redis.ts";
import { describeRedis, type RedisServer, recordOf, startRedis } from "./server.ts";
import { SCRIPTS } from "../../src/integrations/redis/scripts.ts";
import type { RedisScriptClient } from "../../src/integrations/redis/client.ts";
import { ManualClock } from "../../src/index.ts";

describeRedis("faults", () => {
  let server: RedisServer;
  let admin: Redis;
  const clients: Redis[] = [];
  let family = 0;

  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.port, "127.0.0.1", { retryStrategy: () => 20 });
    admin.on("error", () => {}); // it reconnects after the restart test
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.disconnect();
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
  });

  /** A fail-fast ioredis client (no offline queue), as the docs recommend. */
  function client(): Redis {
    const c = new Redis(server.port, "127.0.0.1", {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => 20,
    });
    c.on("error", () => {}); // connection errors surface through the limiter's calls
    clients.push(c);
    return c;
  }

  function store(c: Redis, options: Partial<RedisStoreOptions> = {}): RedisStore {
    return new RedisStore({ client: fromIoredis(c), name: `fault-${family++}`, ...options });
  }

  async function ready(c: Redis): Promise<void> {
    await vi.waitFor(() => expect(c.status).toBe("ready"), { timeout: 5000, interval: 10 });
  }

  /** A store on a ManualClock, Redis's time following it (µs from a fixed epoch). */
  function virtualStore(client: RedisScriptClient, options: Partial<RedisStoreOptions> = {}): { clock: ManualClock; s: RedisStore } {
    const clock = new ManualClock();
    const T0 = 1_760_000_000_000_000;
    const s = new RedisStore({ client, name: `fault-${family++}`, clock, now: () => T0 + Math.round(clock.now() * 1000), onError: () => {}, ...options });
    return { clock, s };
  }

  /** `c`'s scripts, every call refused ("Connection is closed.") while `state.down`. */
  function switchable(c: Redis): { client: RedisScriptClient; state: { down: boolean } } {
    const base = fromIoredis(c);
    const state = { down: true };
    const refused = () => Promise.reject(new Error("Connection is closed."));
    const client: RedisScriptClient = {
      ...base,
      evalsha: (sha, keys, args) => (state.down ? refused() : base.evalsha(sha, keys, args)),
      eval: (script, keys, args) => (state.down ? refused() : base.eval(script, keys, args)),
    };
    return { client, state };
  }

  /**
   * Steps `clock` by `step` ms up to `ms`, with `realMs` of real time between steps (for replies and
   * rejections to be handled), stopping early once `done()` holds.
   */
  async function stepThrough(clock: ManualClock, ms: number, options: { step?: number; realMs?: number; done?: () => boolean | Promise<boolean> } = {}): Promise<void> {
    const { step = 100, realMs = 1, done } = options;
    for (let t = 0; t < ms && !(await done?.()); t += step) {
      await clock.advance(step);
      await new Promise((resolve) => setTimeout(resolve, realMs));
    }
  }

  test("SCRIPT FLUSH mid-run: EVALSHA falls back to EVAL; every reservation granted exactly once, the window exact", async () => {
    const c = client();
    await ready(c);
    const s = store(c);
    const limiter = new RedisWindowLimiter({ store: s, key: "w", limit: 5, interval: 100 });
    const replies = [];
    for (let wave = 0; wave < 4; wave++) {
      const batch = Array.from({ length: 50 }, (_, i) => limiter.reserveOnce(`w${wave}-${i}`, 1));
      await admin.script("FLUSH"); // lands among the batch's calls
      replies.push(...(await Promise.all(batch)));
    }
    expect(replies.every((r) => r.code === 1)).toBe(true);
    const times = replies.map((r) => r.at).sort((a, b) => a - b);
    for (let i = 0; i + 5 < times.length; i++) expect(times[i + 5]! - times[i]!).toBeGreaterThanOrEqual(100_000);
    const entries = await admin.zrange(`${s.prefix}w:w`, "0", "-1");
    expect(new Set(entries.map((m) => m.split("|")[2])).size).toBe(entries.length); // no id twice
    expect(entries.length).toBeGreaterThanOrEqual(5);
    // and through the limiter's own path
    await admin.script("FLUSH");
    const fresh = new RedisWindowLimiter({ store: s, key: "w2", limit: 5, interval: 100 });
    await Promise.all([fresh.acquire(), fresh.acquire()]);
  });

  test("CLIENT PAUSE longer than the timeout: fail-closed rejects; the late reserve is refunded by its cancel", async () => {
    const c = client();
    await ready(c);
    const errors: RedisErrorEvent[] = [];
    const s = store(c, { timeout: 150, retryAfterFailure: 0, onError: (e) => errors.push(e) });
    const limiter = new RedisWindowLimiter({ store: s, key: "w", limit: 1, interval: 60_000 });
    await limiter.acquire(); // the window now holds one grant
    const smooth = new RedisSmoothLimiter({ store: s, key: "s", limit: 1, interval: 60_000 });
    await smooth.acquire();
    // the smooth state string starts with `a c` (anchor µs, permits since the anchor)
    const anchor = async (): Promise<string[]> => (await admin.get(`${s.prefix}s:s`))!.split(" ").slice(0, 2);
    const smoothBefore = await anchor();
    await admin.client("PAUSE", 1200, "WRITE");
    const started = performance.now();
    const queued = limiter.acquire().catch((e: unknown) => e);
    const immediate = new RedisWindowLimiter({ store: s, key: "w2", limit: 5, interval: 60_000 }).acquire().catch((e: unknown) => e);
    const queuedSmooth = smooth.acquire().catch((e: unknown) => e);
    const [error, error2, error3] = await Promise.all([queued, immediate, queuedSmooth]);
    expect(error3).toBeInstanceOf(RedisUnavailableError);
    expect(error).toBeInstanceOf(RedisUnavailableError);
    expect(error2).toBeInstanceOf(RedisUnavailableError);
    expect((error as RedisUnavailableError).message).toMatch(/no reply within 150 ms/);
    expect(performance.now() - started).toBeLessThan(1000); // rejected at the timeout, not after the pause
    // After the pause: the reserves ran (one queued behind the window, one immediate) and their cancels refunded both.
    const tombstones = async (): Promise<number> => {
      const records = await admin.keys(`${s.prefix}r:*`);
      const values = (await Promise.all(records.map(async (k) => (await admin.get(k))!.split(",")))).flat(); // one entry per reservation of a batch
      return values.filter((v) => v === "x").length;
    };
    // tombstones (a retried cancel refunds nothing) once the paused reserves and their cancels ran
    await vi.waitFor(async () => expect(await tombstones()).toBe(3), { timeout: 3000, interval: 20 });
    expect(await anchor()).toEqual(smoothBefore);
    expect(await admin.zcard(`${s.prefix}w:w`)).toBe(1);
    expect(await admin.zcard(`${s.prefix}w:w2`)).toBe(0);
    expect(errors.map((e) => e.operation).filter((o) => o === "reserve")).toHaveLength(3);
  });

  test("CLIENT PAUSE with failure \"open\": callers go ahead at the timeout, and the stalled reserves are still given back", async () => {
    const c = client();
    await ready(c);
    const s = store(c, { timeout: 100, retryAfterFailure: 0, failure: "open" });
    const limiter = new RedisWindowLimiter({ store: s, key: "w", limit: 1, interval: 60_000 });
    await admin.client("PAUSE", 400, "WRITE");
    await expect(limiter.acquire()).resolves.toBeUndefined();
    await vi.waitFor(async () => {
      const batch = (await admin.keys(`${s.prefix}r:*`))[0]!.split(":r:")[1]!;
      expect(await recordOf(admin, s.prefix, `${batch}/1`)).toBe("x");
    }, { timeout: 3000, interval: 20 });
    expect(await admin.zcard(`${s.prefix}w:w`)).toBe(0);
  });

  test("CLIENT PAUSE past the timeout of a tryAcquireAsync: it rejects, and the stalled reserve is given back (it kept its permits)", async () => {
    const c = client();
    await ready(c);
    const s = store(c, { timeout: 150, retryAfterFailure: 0 });
    const limiter = new RedisWindowLimiter({ store: s, key: "w", limit: 10, interval: 60_000 });
    expect(await limiter.tryAcquireAsync(1)).toBe(0);
    await admin.client("PAUSE", 800, "WRITE");
    await expect(limiter.tryAcquireAsync(5)).rejects.toBeInstanceOf(RedisUnavailableError);
    // Before: the 5 permits stayed in the window once Redis ran the late script (a 9 then waited ~59 s).
    await vi.waitFor(async () => {
      const records = await admin.keys(`${s.prefix}r:*`);
      const values = (await Promise.all(records.map(async (k) => (await admin.get(k))!.split(",")))).flat();
      expect(values.filter((v) => v === "x")).toHaveLength(1);
    }, { timeout: 3000, interval: 20 });
    expect(await admin.zcard(`${s.prefix}w:w`)).toBe(1);
    expect(await limiter.tryAcquireAsync(9)).toBe(0);
  });

  test("a cancel that cannot be sent (the connection down: a fail-fast client refuses it) is sent again until it refunds", async () => {
    const c = client();
    await ready(c);
    const base = fromIoredis(c);
    let refuse = 2; // the next two cancel calls fail as a fail-fast client's do while disconnected
    const flaky = {
      ...base,
      evalsha: (sha: string, keys: readonly string[], args: readonly string[]) =>
        sha === SCRIPTS.cancel.sha && refuse-- > 0 ? Promise.reject(new Error("Stream isn't writeable and enableOfflineQueue options is false")) : base.evalsha(sha, keys, args),
    };
    const errors: RedisErrorEvent[] = [];
    const s = new RedisStore({ client: flaky, name: `fault-${family++}`, retryAfterFailure: 0, onError: (e) => errors.push(e) });
    const limiter = new RedisWindowLimiter({ store: s, key: "w", limit: 10, interval: 60_000 });
    await limiter.acquire(10);
    const controller = new AbortController();
    const booked = limiter.acquire(5, { signal: controller.signal }).catch((e: unknown) => e);
    await vi.waitFor(async () => expect(await admin.zcard(`${s.prefix}w:w`)).toBe(2), { timeout: 2000, interval: 10 }); // booked for t + 60 s
    controller.abort();
    expect(await booked).toBeInstanceOf(DOMException);
    // Before: the cancel was tried once; the 5 permits stayed booked for a minute.
    await vi.waitFor(async () => expect(await admin.zcard(`${s.prefix}w:w`)).toBe(1), { timeout: 3000, interval: 20 });
    expect(errors.filter((e) => e.operation === "cancel")).toHaveLength(2);
  });

  test("tryAcquireAsync right after pause() is not granted inside the pause, even when the pause script must be loaded first (NOSCRIPT)", async () => {
    const c = client();
    await ready(c);
    const s = store(c);
    for (const limiter of [new RedisWindowLimiter({ store: s, key: "w", limit: 10, interval: 1000 }), new RedisSmoothLimiter({ store: s, key: "s", limit: 10, burst: 5 })]) {
      await limiter.acquire(1);
      await admin.script("FLUSH");
      await limiter.tryAcquireAsync(1); // the reserve script is loaded again, the pause script not
      limiter.pause(5000);
      // Before: 0 (granted), the probe having overtaken the pause's EVAL resend.
      expect(await limiter.tryAcquireAsync(1)).toBeGreaterThan(4900);
    }
  });

  test("a failed cancel of a waiter booked a minute ahead is sent again past cancelGrace after the failure: until its grant time plus cancelGrace", async () => {
    const c = client();
    await ready(c);
    const base = fromIoredis(c);
    let refusing = true;
    const flaky = {
      ...base,
      evalsha: (sha: string, keys: readonly string[], args: readonly string[]) =>
        sha === SCRIPTS.cancel.sha && refusing ? Promise.reject(new Error("Connection is closed.")) : base.evalsha(sha, keys, args),
    };
    const { clock, s } = virtualStore(flaky, { retryAfterFailure: 0 });
    const limiter = new RedisWindowLimiter({ store: s, key: "w", limit: 10, interval: 60_000 });
    await limiter.acquire(10);
    const controller = new AbortController();
    const booked = limiter.acquire(5, { signal: controller.signal }).catch((e: unknown) => e);
    await vi.waitFor(async () => expect(await admin.zcard(`${s.prefix}w:w`)).toBe(2), { timeout: 2000, interval: 10 });
    controller.abort();
    await booked;
    // 7 s of refused cancels (cancelGrace is 5 s): before, the retries gave up 5 s after the first failure.
    await stepThrough(clock, 7000);
    refusing = false;
    // The next resend is due within a second of virtual time. Stepped, with real time between steps
    // for the failed attempt's rejection and the resend's reply: a single advance raced a failure
    // still being handled, whose next attempt was then timed after it (flaked under load).
    const left = () => admin.zcard(`${s.prefix}w:w`);
    await stepThrough(clock, 5000, { realMs: 5, done: async () => (await left()) === 1 });
    expect(await left()).toBe(1);
  });

  test("the same when the waiter is aborted during its round trip (before its grant time is known): the cancel is sent again until the grant time plus cancelGrace, not until cancelGrace past the failure", async () => {
    const c = client();
    await ready(c);
    const base = fromIoredis(c);
    let refusing = true;
    let holdReserve: Promise<void> | undefined;
    let releaseReserve = () => {};
    let lateReplied = false;
    const flaky = {
      ...base,
      evalsha: async (sha: string, keys: readonly string[], args: readonly string[]) => {
        if (sha === SCRIPTS.cancel.sha && refusing) throw new Error("Connection is closed.");
        const reply = await base.evalsha(sha, keys, args);
        if (sha === SCRIPTS.reserve.sha && holdReserve !== undefined) {
          await holdReserve; // the reply is late
          lateReplied = true;
        }
        return reply;
      },
    };
    const { clock, s } = virtualStore(flaky, { retryAfterFailure: 0 });
    const limiter = new RedisWindowLimiter({ store: s, key: "w", limit: 10, interval: 60_000 });
    await limiter.acquire(10);
    holdReserve = new Promise((resolve) => (releaseReserve = resolve));
    const controller = new AbortController();
    const booked = limiter.acquire(5, { signal: controller.signal }).catch((e: unknown) => e);
    await vi.waitFor(async () => expect(await admin.zcard(`${s.prefix}w:w`)).toBe(2), { timeout: 2000, interval: 10 });
    controller.abort(); // its reply has not come back: the grant time is unknown
    await booked;
    releaseReserve();
    // The late reply has reached the limiter (and a turn has passed for it to act) before the outage
    // is stepped through: else, on a loaded machine, the first cancel could get through after it.
    await vi.waitFor(() => expect(lateReplied).toBe(true), { timeout: 2000, interval: 5 });
    await new Promise((resolve) => setTimeout(resolve, 5));
    await stepThrough(clock, 7000);
    refusing = false;
    const left = () => admin.zcard(`${s.prefix}w:w`);
    await stepThrough(clock, 5000, { realMs: 5, done: async () => (await left()) === 1 });
    expect(await left()).toBe(1);
  });

  test("under a local share, callers still waiting in the local limiter when the cooldown ends ask Redis again, instead of being granted locally on top of Redis's rate (fleet red-team, 2026-11-27: drained 7-8 s after recovery)", async () => {
    const c = client();
    await ready(c);
    const { client: flaky, state } = switchable(c);
    const { clock, s } = virtualStore(flaky, { retryAfterFailure: 1000, failure: { local: 0.5 } });
    const limiter = new RedisWindowLimiter({ store: s, key: "w", limit: 4, interval: 10_000 });
    const at: number[] = [];
    const first = Array.from({ length: 3 }, () => limiter.acquire().then(() => at.push(clock.now()))); // fail at Redis: the local share
    await new Promise((resolve) => setTimeout(resolve, 20));
    const later = Array.from({ length: 3 }, () => limiter.acquire().then(() => at.push(clock.now()))); // the store is down: straight to the share
    await new Promise((resolve) => setTimeout(resolve, 20));
    await clock.advance(0);
    expect(at).toEqual([0, 0]); // the local share (2 per 10 s) granted two; four wait locally, until 10 s
    state.down = false; // Redis is back
    await stepThrough(clock, 3000, { realMs: 5, done: () => at.length === 6 });
    expect(at).toHaveLength(6); // (the local share alone would grant the other four at 10 s)
    await Promise.all([...first, ...later]);
    // Asked again when the cooldown ended (1 s), Redis granted the four from its own window.
    expect(at.slice(2).every((t) => t >= 1000 && t < 2000)).toBe(true);
    expect(await admin.zcard(`${s.prefix}w:w`)).toBe(4);
  });

  test("under \"open\", a caller held by a pause during an outage asks Redis when the pause ends if it is back, instead of being granted by the policy with every other sleeper at that instant (third review)", async () => {
    const c = client();
    await ready(c);
    const { client: flaky, state } = switchable(c);
    const { clock, s } = virtualStore(flaky, { retryAfterFailure: 300, failure: "open" });
    const limiter = new RedisWindowLimiter({ store: s, key: "w", limit: 1, interval: 10_000 });
    await limiter.acquire(); // the outage is found: "open" grants
    limiter.pause(1000); // a 429: Retry-After 1
    const at: number[] = [];
    const sleepers = Array.from({ length: 3 }, () => limiter.acquire().then(() => at.push(clock.now())));
    state.down = false; // Redis is back during the pause
    await stepThrough(clock, 25_000, { step: 500, realMs: 5, done: () => at.length === 3 });
    await Promise.all(sleepers);
    // Redis decided them, one per 10 s window, not "open" all at 1 s.
    expect(at).toEqual([1000, 11_000, 21_000]);
  });

  test("…and a caller that aborts while waiting in the local share takes nothing anywhere", async () => {
    const c = client();
    await ready(c);
    const { clock, s } = virtualStore(switchable(c).client, { retryAfterFailure: 1000, failure: { local: 0.5 } });
    const limiter = new RedisWindowLimiter({ store: s, key: "w", limit: 2, interval: 10_000 });
    await limiter.acquire(); // the share: 1 per 10 s
    const controller = new AbortController();
    const waiting = limiter.acquire(1, { signal: controller.signal }).then(() => "granted", (e: unknown) => String(e));
    await clock.advance(500);
    controller.abort(new Error("left"));
    expect(await waiting).toContain("left");
    await clock.advance(2000);
    expect(clock.pendingTimers).toBeLessThanOrEqual(1); // no timer left behind for it
  });

  test("a settle whose reply never came (CLIENT PAUSE past the timeout) applies once, even sent again", async () => {
    const c = client();
    await ready(c);
    const errors: RedisErrorEvent[] = [];
    const s = store(c, { timeout: 150, retryAfterFailure: 0, onError: (e) => errors.push(e) });
    const limiter = new RedisWindowLimiter({ store: s, key: "w", limit: 10, interval: 60_000 });
    const r = await limiter.reserve(8);
    await admin.client("PAUSE", 600, "WRITE");
    expect(r.settle(3)).toBe(true);
    expect(await r.applied).toBe(false); // no reply within the timeout: reported, not known to be applied
    expect(errors.map((e) => e.operation)).toEqual(["cancel"]);
    // the stalled settle runs once the pause ends: 5 back
    await vi.waitFor(async () => expect(await recordOf(admin, s.prefix, r.id!)).toMatch(/\|8\|s$/), { timeout: 3000, interval: 20 });
    // the client resends it (a reconnect): nothing applied twice
    expect((await limiter.settleBatch([r.id!], [3]))[0]!.code).toBe(0);
    expect(await admin.zrange(`${s.prefix}w:w`, "0", "-1", "WITHSCORES")).toEqual([expect.stringMatching(/\|3\|/), "3"]);
    expect(await limiter.tryAcquireAsync(7)).toBe(0);
  });

  test("a misconfiguration (WRONGTYPE) is never failed open: RedisCommandError, whatever the policy", async () => {
    const c = client();
    await ready(c);
    const s = store(c, { failure: "open" });
    await admin.set(`${s.prefix}w:w`, "not a zset");
    const limiter = new RedisWindowLimiter({ store: s, key: "w", limit: 1, interval: 1000 });
    const error = await limiter.acquire().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisCommandError);
    expect((error as RedisCommandError).message).toMatch(/WRONGTYPE/);
    expect(s.isDown()).toBe(false); // not an outage: the next call still goes to Redis
    await expect(limiter.tryAcquireAsync()).rejects.toBeInstanceOf(RedisCommandError);
    // A smooth key's state is read with MGET, which answers nil for a key of another type: it must
    // still surface as WRONGTYPE, never be taken for a fresh key and overwritten.
    await admin.hset(`${s.prefix}s:s`, "a", "1");
    const smooth = new RedisSmoothLimiter({ store: s, key: "s", limit: 1, interval: 1000 });
    const smoothError = await smooth.acquire().catch((e: unknown) => e);
    expect(smoothError).toBeInstanceOf(RedisCommandError);
    expect((smoothError as RedisCommandError).message).toMatch(/WRONGTYPE/);
    expect(await admin.hget(`${s.prefix}s:s`, "a")).toBe("1"); // untouched
  });

  test("server killed and restarted on the same port: held reservations still grant; new calls follow the policy; service resumes", async () => {
    const c = client();
    await ready(c);
    const closed = store(c, { timeout: 200, retryAfterFailure: 100 });
    const open = new RedisStore({ client: fromIoredis(c), name: closed.name, timeout: 200, failure: "open" });
    const local = new RedisStore({ client: fromIoredis(c), name: closed.name, timeout: 200, failure: { local: 0.5 } });
    const spec = { key: "w", limit: 2, interval: 600 };
    const limiter = new RedisWindowLimiter({ store: closed, ...spec });
    await limiter.acquire();
    await limiter.acquire();
    const started = performance.now();
    const held = limiter.acquire().then(() => performance.now() - started); // reserved for ≈ 600 ms from now
    await vi.waitFor(() => expect(limiter.inFlight).toBe(0));

    await server.kill();
    await expect(limiter.acquire()).rejects.toBeInstanceOf(RedisUnavailableError); // fail-closed
    await expect(limiter.acquire()).rejects.toThrow(/recent failure/); // cooldown: no call at all
    await expect(new RedisWindowLimiter({ store: open, ...spec }).acquire()).resolves.toBeUndefined();
    const fallback = new RedisWindowLimiter({ store: local, ...spec }); // local share: 1 per 600 ms
    await expect(fallback.acquire()).resolves.toBeUndefined();
    expect(await fallback.tryAcquireAsync()).toBeGreaterThan(0);
    expect(await held).toBeGreaterThanOrEqual(550); // the held reservation was granted on time, Redis down

    await server.restart();
    await ready(c);
    await vi.waitFor(() => expect(closed.isDown()).toBe(false), { interval: 5 }); // the cooldown is over
    await limiter.acquire(); // new server: NOSCRIPT → EVAL, fresh state
    const entries = await admin.zrange(`${closed.prefix}w:w`, "0", "-1");
    expect(entries).toHaveLength(1); // exactly the grant made after the restart: nothing lost, nothing doubled
  }, 20_000);
});
