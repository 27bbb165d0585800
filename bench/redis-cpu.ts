/**
 * Server CPU per decision: the redis-server main thread's user + system CPU (INFO cpu) spent per
 * decision, for sluice's reserve script deciding 1 and 32 requests per call, beside
 * rate-limiter-flexible's script. CPU time is not inflated when the server is descheduled, so on a
 * shared machine it is steadier than wall time; it includes reading requests and writing replies
 * (pipelined 50 calls at a time, so that part is small). Limits never bind.
 * Run: node_modules/.bin/node bench/redis-cpu.ts [rounds, default 7]
 *
 * @module
 */
import { Redis } from "ioredis";
import { RateLimiterRedis } from "rate-limiter-flexible";
import { combineRedis, fromIoredis, RedisSmoothLimiter, RedisStore, RedisWindowLimiter } from "../src/redis.ts";
import { startRedis } from "../test/redis/redis-process.ts";

const ROUNDS = Number(process.argv[2] ?? 7);
const HUGE = 1_000_000_000;
const server = await startRedis();
const redis = new Redis(server.port, "127.0.0.1");

/** The server main thread's CPU time so far, µs. */
async function cpu(): Promise<number> {
  const info = String(await redis.info("cpu"));
  const field = (name: string): number => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)![1]);
  return 1e6 * (field("used_cpu_user_main_thread") + field("used_cpu_sys_main_thread"));
}

try {
  const store = new RedisStore({ client: fromIoredis(redis), name: "cpu" });
  const limiters = {
    smooth: new RedisSmoothLimiter({ store, key: "s", limit: HUGE, interval: 1000 }),
    window: new RedisWindowLimiter({ store, key: "w", limit: HUGE, interval: 1000 }),
    combined: combineRedis(
      new RedisWindowLimiter({ store, key: "w2", limit: HUGE, interval: 1000 }),
      new RedisSmoothLimiter({ store, key: "s2", limit: HUGE, interval: 1000 }),
    ),
  };
  const rlf = new RateLimiterRedis({ storeClient: redis, keyPrefix: "rlf-cpu", points: HUGE, duration: 1 });
  let batch = 0;
  // [label, decisions per call, one call]
  const cases: [string, number, () => Promise<unknown>][] = [];
  for (const size of [1, 32]) {
    const permits = Array<number>(size).fill(1);
    const waits = Array<number>(size).fill(Infinity);
    for (const [name, limiter] of Object.entries(limiters)) {
      cases.push([`sluice ${name}, ${size} per call`, size, () => limiter.reserveBatch(`c${batch++}`, permits, waits)]);
    }
  }
  cases.push(["rate-limiter-flexible consume", 1, () => rlf.consume("k", 1)]);
  const figures = new Map<string, number[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [label, size, call] of cases) {
      const calls = Math.ceil(3000 / size);
      const run = async (count: number): Promise<void> => {
        for (let i = 0; i < count; i += 50) await Promise.all(Array.from({ length: 50 }, call));
      };
      await run(100);
      const before = await cpu();
      await run(calls);
      figures.set(label, [...(figures.get(label) ?? []), (await cpu() - before) / (Math.ceil(calls / 50) * 50 * size)]);
    }
  }
  for (const [label, values] of figures) {
    const sorted = [...values].sort((a, b) => a - b);
    console.log(`${label.padEnd(32)} server CPU µs per decision: median ${sorted[sorted.length >> 1]!.toFixed(2).padStart(6)}, min ${sorted[0]!.toFixed(2)}`);
  }
} finally {
  redis.disconnect();
  await server.stop();
}
