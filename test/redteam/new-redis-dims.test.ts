/**
 * Red team: sluice/redis named dimensions (`combineRedis({ requests, tokens })`) attacked with an
 * own model — several child processes against one real redis-server, settle/cancel/release races,
 * expiry, duplicate ids, bad inputs, secrets, and the `local` failure policy after a kill.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { expect, test } from "vitest";
import { ManualClock, MaxWaitExceededError } from "../../src/index.ts";
import { combineRedis, fromIoredis, RedisStore, RedisUnavailableError, RedisWindowLimiter, RedisSmoothLimiter } from "../../src/redis.ts";
import { describeRedis, type RedisServer, startRedis, useRedis } from "../redis/server.ts";

const WORKER = fileURLToPath(new URL("./new-redis-worker.ts", import.meta.url));
const T0 = 1_760_000_000_000_000;
type Kept = { at: number; requests: number; tokens: number; how: string; applied: boolean; second: boolean };

function runWorker(port: number, name: string, n: number, seed: number): Promise<Kept[]> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [WORKER, String(port), name, String(n), String(seed)], { maxBuffer: 16 << 20 },
      (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout))));
  });
}

/** The most any window of length `span` ms holds of `pick` (own sliding-window model over local grant times). */
function worstWindow(kept: readonly Kept[], span: number, pick: (k: Kept) => number): number {
  const sorted = [...kept].sort((a, b) => a.at - b.at);
  let worst = 0;
  let sum = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi++) {
    sum += pick(sorted[hi]!);
    while (sorted[hi]!.at - sorted[lo]!.at >= span) sum -= pick(sorted[lo++]!);
    worst = Math.max(worst, sum);
  }
  return worst;
}

describeRedis("red team: named Redis dimensions", () => {
  let redis: Redis;
  let server: RedisServer;
  let family = 0;
  useRedis((s, r) => {
    server = s;
    redis = r;
  });

  function virtual(extra: Record<string, unknown> = {}) {
    const clock = new ManualClock();
    const store = new RedisStore({
      client: fromIoredis(redis), name: `rn-${family++}`, clock,
      now: () => T0 + Math.round(clock.now() * 1000), timeout: 60_000, ...extra,
    });
    const llm = combineRedis({
      requests: new RedisWindowLimiter({ store, key: "rpm", limit: 5, interval: 60_000 }),
      tokens: new RedisWindowLimiter({ store, key: "tpm", limit: 1000, interval: 60_000 }),
    });
    return { clock, store, llm };
  }

  test("three processes, reserve/settle/cancel/release: never over either dimension in any window (own model)", async () => {
    const name = `rn-fleet-${Date.now()}`;
    const results = await Promise.all([1, 2, 3].map((seed) => runWorker(server.port, name, 24, seed * 7919)));
    const all = results.flat();
    expect(all).toHaveLength(72);
    // local grant times are at most ε after the server's: a violation needs L+1 within interval − ε
    const span = 1000 - 150;
    expect(worstWindow(all, span, (k) => k.requests)).toBeLessThanOrEqual(10);
    expect(worstWindow(all, span, (k) => k.tokens)).toBeLessThanOrEqual(3000);
    // every settle applied (records live 10 min); every second settle refused
    expect(all.filter((k) => !k.applied)).toEqual([]);
    expect(all.filter((k) => k.second)).toEqual([]);
    // every kind of ending was exercised
    for (const how of ["settle-tokens", "cancel", "release", "settle-1", "settle-record"]) {
      expect(all.some((k) => k.how === how)).toBe(true);
    }
  }, 120_000);

  test("settle twice, settle after cancel, cancel after settle: the first wins, capacity as the model says", async () => {
    const { llm } = virtual();
    const a = await llm.reserve({ requests: 1, tokens: 900 });
    expect(a.settle({ tokens: 100 })).toBe(true);
    expect(a.settle({ tokens: 0 })).toBe(false);
    expect(a.cancel()).toBe(false);
    expect(a.release()).toBe(false);
    expect(await a.applied).toBe(true);
    // model: requests 1/5 used, tokens 100/1000 used → 900 more tokens fit, 901 do not
    await expect(llm.reserve({ tokens: 901 }, { maxWait: 0 })).rejects.toBeInstanceOf(MaxWaitExceededError);
    const b = await llm.reserve({ tokens: 900 }, { maxWait: 0 });
    expect(b.cancel()).toBe(true);
    expect(b.settle({ tokens: 5 })).toBe(false);
    expect(await b.applied).toBe(true);
    // b gave everything back: 900 fit again; 4 requests fit, not 5
    const c = await llm.reserve({ requests: 4, tokens: 900 }, { maxWait: 0 });
    c.release();
    await expect(llm.reserve({ requests: 1 }, { maxWait: 0 })).rejects.toBeInstanceOf(MaxWaitExceededError);
  });

  test("duplicate ids in one cancel call: applied once (requests and tokens)", async () => {
    const { llm } = virtual();
    const r = await llm.reserve({ requests: 2, tokens: 800 });
    const id = r.id!;
    const replies = await llm.settleBatch([id, id, id], [[1, 100], [0, 0], undefined]);
    expect(replies.map((x) => x.code)).toEqual([1, 0, 0]);
    // model: 1 request, 100 tokens held → 4 requests / 900 tokens fit, 5 / 901 do not
    await expect(llm.reserve({ requests: 5 }, { maxWait: 0 })).rejects.toBeInstanceOf(MaxWaitExceededError);
    await expect(llm.reserve({ tokens: 901 }, { maxWait: 0 })).rejects.toBeInstanceOf(MaxWaitExceededError);
    const ok = await llm.reserve({ requests: 4, tokens: 900 }, { maxWait: 0 });
    ok.release();
  });

  test("a settle after settleTtl changes nothing: applied false, the reservation stays counted in full", async () => {
    const { llm } = virtual({ settleTtl: 100, cancelGrace: 0 }); // the record lives max(settleTtl, cancelGrace)
    const r = await llm.reserve({ requests: 1, tokens: 900 });
    await new Promise((resolve) => setTimeout(resolve, 400)); // real time: the record's TTL is Redis's
    expect(r.settle({ tokens: 10 })).toBe(true);
    expect(await r.applied).toBe(false);
    await expect(llm.reserve({ tokens: 101 }, { maxWait: 0 })).rejects.toBeInstanceOf(MaxWaitExceededError);
  });

  test("a dimension left out asks 0: no wait on it even when it is exhausted", async () => {
    const { llm } = virtual();
    const full = await llm.reserve({ requests: 5, tokens: 1 });
    full.release();
    const t = await llm.reserve({ tokens: 999 }, { maxWait: 0 }); // requests exhausted, not asked
    expect(t.permits).toEqual({ tokens: 999 });
    t.release();
  });

  test("pause on a named combination holds the whole fleet (another process's combination on the same keys waits)", async () => {
    const { clock, store, llm } = virtual();
    const second = new RedisStore({ client: fromIoredis(redis), name: store.name, clock, now: () => T0 + Math.round(clock.now() * 1000), timeout: 60_000 });
    const other = combineRedis({
      requests: new RedisWindowLimiter({ store: second, key: "rpm", limit: 5, interval: 60_000 }),
      tokens: new RedisWindowLimiter({ store: second, key: "tpm", limit: 1000, interval: 60_000 }),
    });
    await llm.pauseOnce(10_000);
    await expect(other.reserve({ requests: 1, tokens: 1 }, { maxWait: 9_999 })).rejects.toBeInstanceOf(MaxWaitExceededError);
    expect(await other.tryAcquireAsync(1)).toBeGreaterThanOrEqual(9_999);
    void clock;
  });

  test("bad inputs: TypeError/RangeError naming the option and the value; nothing taken", async () => {
    const { llm } = virtual();
    const cases: [() => unknown, RegExp][] = [
      [() => llm.reserve({ requests: -1 }), /permits\.requests.*-1/],
      [() => llm.reserve({ tokens: 1.5 }), /permits\.tokens.*1\.5/],
      [() => llm.reserve({ tokens: Number.NaN }), /permits\.tokens.*NaN/],
      [() => llm.reserve({ bogus: 1 }), /permits\.bogus/],
      [() => llm.reserve({ tokens: 1001 }), /permits\.tokens.*1000.*1001/],
      [() => llm.reserve("3" as never), /permits.*"3"/],
    ];
    for (const [call, message] of cases) {
      let error: unknown;
      try {
        await call();
      } catch (e) {
        error = e;
      }
      expect(error, String(message)).toBeInstanceOf(Error);
      expect(["TypeError", "RangeError"]).toContain((error as Error).name);
      expect((error as Error).message).toMatch(message);
    }
    const r = await llm.reserve({ requests: 1, tokens: 10 });
    expect(() => r.settle({ tokens: -2 })).toThrow(/actual\.tokens.*-2/);
    expect(() => r.settle({ nope: 1 } as never)).toThrow(/actual\.nope/);
    expect(() => r.settle(2.5)).toThrow(/actual.*2\.5/);
    expect(r.settled).toBe(false);
    expect(r.cancel()).toBe(true);
    const s = new RedisStore({ client: fromIoredis(redis), name: `rn-${family++}` });
    const a = new RedisWindowLimiter({ store: s, key: "same", limit: 5, interval: 1000 });
    expect(() => combineRedis({ requests: a, tokens: a })).toThrow(TypeError);
    expect(() => combineRedis({ requests: a, tokens: new RedisWindowLimiter({ store: s, key: "same", limit: 6, interval: 1000 }) })).toThrow(/same/);
    expect(() => new RedisStore({ client: fromIoredis(redis), name: "x", settleTtl: 0 })).toThrow(/settleTtl.*0/);
  });

  test("secrets: a password in the Redis URL never appears in errors or onError events", async () => {
    const events: unknown[] = [];
    const closed = await (await import("../redis/server.ts")).freePort(); // nothing listens: connection refused
    const client = new Redis(`redis://user:Sup3rS3cretPw@127.0.0.1:${closed}/0`, { maxRetriesPerRequest: 0, retryStrategy: () => 20 });
    client.on("error", () => {});
    const store = new RedisStore({ client: fromIoredis(client), name: `rn-${family++}`, timeout: 500, onError: (e: unknown) => events.push(e) });
    const llm = combineRedis({
      requests: new RedisWindowLimiter({ store, key: "rpm", limit: 5, interval: 1000 }),
      tokens: new RedisWindowLimiter({ store, key: "tpm", limit: 1000, interval: 1000 }),
    });
    let error: unknown;
    try {
      await llm.reserve({ requests: 1, tokens: 1 });
    } catch (e) {
      error = e;
    }
    client.disconnect();
    const seen: string[] = [];
    const walk = (e: unknown, depth = 0): void => {
      if (e === undefined || e === null || depth > 5) return;
      seen.push(String(e), (e as Error).message ?? "", (e as Error).stack ?? "", JSON.stringify(e, Object.getOwnPropertyNames(e)));
      walk((e as Error).cause, depth + 1);
      walk((e as { error?: unknown }).error, depth + 1);
    };
    walk(error);
    events.forEach((e) => walk(e));
    expect(error ?? events[0]).toBeDefined();
    expect(seen.join("\n")).not.toContain("Sup3rS3cretPw");
  });

  test("local failure policy: after a kill, a per-dimension reserve falls back to a named in-process combination at its share", async () => {
    const own = await startRedis();
    const client = new Redis(own.port, "127.0.0.1", { maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 50 });
    client.on("error", () => {});
    try {
      const store = new RedisStore({ client: fromIoredis(client), name: `rn-${family++}`, timeout: 300, failure: { local: 0.5 }, onError: () => {} });
      const llm = combineRedis({
        requests: new RedisWindowLimiter({ store, key: "rpm", limit: 10, interval: 60_000 }),
        tokens: new RedisSmoothLimiter({ store, key: "tpm", limit: 2000, interval: 60_000, burst: 2000 }),
      });
      if (client.status !== "ready") await new Promise((resolve) => client.once("ready", resolve));
      const first = await llm.reserve({ requests: 1, tokens: 100 });
      expect(first.id).toBeDefined();
      await own.kill();
      // share 0.5: 5 requests per minute locally, 1000 tokens of burst
      const local = [];
      for (let i = 0; i < 5; i++) local.push(await llm.reserve({ requests: 1, tokens: 10 }, { maxWait: 0 }));
      expect(local.every((r) => r.id === undefined)).toBe(true);
      await expect(llm.reserve({ requests: 1 }, { maxWait: 0 })).rejects.toBeInstanceOf(MaxWaitExceededError);
      // a dimension left out asks 0 in the fallback too: tokens alone pass although requests are spent
      const tokensOnly = await llm.reserve({ tokens: 10 }, { maxWait: 0 });
      expect(tokensOnly.settle({ tokens: 1 })).toBe(true);
      expect(await tokensOnly.applied).toBe(false);
      // the handle granted before the outage: its settle is not applied (Redis is down), never rejects
      expect(first.settle({ tokens: 5 })).toBe(true);
      expect(await first.applied).toBe(false);
    } finally {
      client.disconnect();
      await own.stop();
    }
  }, 30_000);

  test("local failure policy: a reservation the fleet can grant but the local share cannot (900 of 1000 tokens, share 0.5) gets a RedisUnavailableError during an outage, never a RangeError", async () => {
    const own = await startRedis();
    const client = new Redis(own.port, "127.0.0.1", { maxRetriesPerRequest: 0, retryStrategy: () => 50 });
    client.on("error", () => {});
    try {
      if (client.status !== "ready") await new Promise((resolve) => client.once("ready", resolve));
      const store = new RedisStore({ client: fromIoredis(client), name: `rn-${family++}`, timeout: 300, failure: { local: 0.5 }, onError: () => {} });
      const llm = combineRedis({
        requests: new RedisWindowLimiter({ store, key: "rpm", limit: 10, interval: 60_000 }),
        tokens: new RedisWindowLimiter({ store, key: "tpm", limit: 1000, interval: 60_000 }),
      });
      (await llm.reserve({ requests: 1, tokens: 900 })).release(); // valid while Redis is up
      await own.kill();
      // the same valid call during the outage: granted by the local share, or a RedisUnavailableError /
      // MaxWaitExceededError — never a RangeError claiming the limiter "can never grant" it
      const outcome = await llm.reserve({ requests: 1, tokens: 900 }, { maxWait: 1000 }).then(
        (r) => (r.release(), "granted"),
        (e: Error) => `${e.name}: ${e.message}`,
      );
      expect(outcome).toMatch(/^(granted|RedisUnavailableError|MaxWaitExceededError)/);
    } finally {
      client.disconnect();
      await own.stop();
    }
  }, 30_000);

  test("closed failure policy: a kill mid-run rejects with RedisUnavailableError, then Redis back grants again", async () => {
    const own = await startRedis();
    const client = new Redis(own.port, "127.0.0.1", { maxRetriesPerRequest: 0, retryStrategy: () => 50 });
    client.on("error", () => {});
    try {
      const store = new RedisStore({ client: fromIoredis(client), name: `rn-${family++}`, timeout: 300, onError: () => {} });
      const llm = combineRedis({
        requests: new RedisWindowLimiter({ store, key: "rpm", limit: 10, interval: 60_000 }),
        tokens: new RedisWindowLimiter({ store, key: "tpm", limit: 2000, interval: 60_000 }),
      });
      (await llm.reserve({ requests: 1, tokens: 100 })).release();
      await own.kill();
      await expect(llm.reserve({ requests: 1, tokens: 100 })).rejects.toBeInstanceOf(RedisUnavailableError);
      await own.restart();
      let granted = false;
      for (let i = 0; i < 60 && !granted; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        try {
          (await llm.reserve({ requests: 1, tokens: 100 })).release();
          granted = true;
        } catch (e) {
          expect(e).toBeInstanceOf(RedisUnavailableError);
        }
      }
      expect(granted).toBe(true);
    } finally {
      client.disconnect();
      await own.stop();
    }
  }, 30_000);
});
