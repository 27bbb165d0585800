/**
 * Benchmark: sluice/redis reservations vs rate-limiter-flexible's RateLimiterRedis on the same
 * private redis-server (127.0.0.1, no persistence), both through ioredis, with limits that never bind
 * (so every call is a grant and we measure the decision's cost).
 *
 * Closed loop: each lane sends one call, awaits it, records its latency, repeats until the deadline.
 * Run: node_modules/.bin/node bench/redis.ts [seconds per measurement, default 1]
 */
import { Redis } from "ioredis";
import { RateLimiterRedis } from "rate-limiter-flexible";
import {
  combineRedis,
  fromIoredis,
  type RedisLimiter,
  RedisSmoothLimiter,
  RedisStore,
  RedisWindowLimiter,
} from "../src/redis.ts";
import { BINARY, startRedis } from "../test/redis/redis-process.ts";

const SECONDS = Number(process.argv[2] ?? 1);

interface Result {
  readonly library: string;
  readonly scenario: string;
  readonly shape: string;
  readonly ops: number;
  readonly p50: number;
  readonly p99: number;
  readonly server: number;
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

/** Runs `lanes` closed loops of `op(laneIndex, i)` for SECONDS; returns throughput and latency. */
async function measure(lanes: number, op: (lane: number, i: number) => Promise<unknown>): Promise<{ ops: number; p50: number; p99: number }> {
  const latencies: number[] = [];
  // warm-up: scripts loaded, connections hot
  await Promise.all(Array.from({ length: lanes }, (_, lane) => op(lane, -1)));
  const start = performance.now();
  const deadline = start + SECONDS * 1000;
  let counter = 0;
  await Promise.all(Array.from({ length: lanes }, async (_, lane) => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      await op(lane, counter++);
      latencies.push(performance.now() - t0);
    }
  }));
  const elapsed = (performance.now() - start) / 1000;
  const sorted = Float64Array.from(latencies).sort();
  return { ops: latencies.length / elapsed, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99) };
}

const server = await startRedis();
const admin = new Redis(server.port, "127.0.0.1");
const connections = (n: number): Redis[] => Array.from({ length: n }, () => new Redis(server.port, "127.0.0.1"));
const results: Result[] = [];
const ROUNDS = 3;
let family = 0;

/** Server-side µs per script call since the last CONFIG RESETSTAT (EVALSHA and EVAL together). */
async function serverUsecPerCall(): Promise<number> {
  const stats = String(await admin.info("commandstats"));
  let calls = 0;
  let usec = 0;
  for (const m of stats.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+),usec=(\d+)/g)) {
    calls += Number(m[1]);
    usec += Number(m[2]);
  }
  return calls === 0 ? NaN : usec / calls;
}

interface Row {
  readonly library: string;
  readonly scenario: string;
  readonly run: () => Promise<{ ops: number; p50: number; p99: number }>;
  readonly rounds: { ops: number; p50: number; p99: number; server: number }[];
}

try {
  const shapes: [string, number, number][] = [
    ["1 connection, 1 in flight", 1, 1],
    ["1 connection, 64 in flight", 1, 64],
    ["8 connections × 8 in flight", 8, 8],
  ];
  for (const [shape, conns, perConn] of shapes) {
    const clients = connections(conns);
    const lanes = conns * perConn;
    const name = `bench-${family++}`;
    const stores = clients.map((c) => new RedisStore({ client: fromIoredis(c), name }));
    const windowOf = (s: RedisStore): RedisLimiter =>
      new RedisWindowLimiter({ store: s, key: "w", limit: 1_000_000_000, interval: 1000 });
    const smoothOf = (s: RedisStore): RedisLimiter =>
      new RedisSmoothLimiter({ store: s, key: "s", limit: 1_000_000_000, interval: 1000 });
    const reserveRow = (scenario: string, limiters: RedisLimiter[]): Row => ({
      library: "sluice/redis reserve",
      scenario,
      run: () => measure(lanes, (lane, i) => limiters[lane % conns]!.reserveOnce(`${name}-${lane}-${i}-${Math.random()}`, 1)),
      rounds: [],
    });
    const acquireLimiters = stores.map(windowOf);
    const rlf = clients.map((c) =>
      new RateLimiterRedis({ storeClient: c, keyPrefix: `rlf-${name}`, points: 1_000_000_000, duration: 1 })
    );
    const rows: Row[] = [
      reserveRow("smooth, 1 key", stores.map(smoothOf)),
      reserveRow("strict window, 1 key", stores.map(windowOf)),
      reserveRow("window + smooth, combined", stores.map((s) => combineRedis(windowOf(s), smoothOf(s)))),
      {
        library: "sluice/redis acquire()",
        scenario: "strict window, 1 key",
        run: () => measure(lanes, (lane) => acquireLimiters[lane % conns]!.acquire()),
        rounds: [],
      },
      {
        library: "rate-limiter-flexible",
        scenario: "fixed window, 1 key",
        run: () => measure(lanes, (lane) => rlf[lane % conns]!.consume("k", 1)),
        rounds: [],
      },
    ];
    for (let round = 0; round < ROUNDS; round++) {
      for (const row of rows) {
        await admin.config("RESETSTAT");
        const r = await row.run();
        row.rounds.push({ ...r, server: await serverUsecPerCall() });
      }
    }
    for (const row of rows) {
      const median = [...row.rounds].sort((a, b) => a.ops - b.ops)[row.rounds.length >> 1]!;
      results.push({ library: row.library, scenario: row.scenario, shape, ...median });
    }
    for (const c of clients) c.disconnect();
  }

  const version = (await import("node:child_process")).execFileSync(BINARY, ["--version"], { encoding: "utf8" }).trim();
  console.log(`\n## sluice/redis vs rate-limiter-flexible (${new Date().toISOString().slice(0, 10)})\n`);
  console.log(
    `Node ${process.version}, ${version.split(" ").slice(0, 3).join(" ")}, ioredis for both; server and client share ` +
      `this machine's cores (absolute numbers are noisy, compare rows); closed loop, limits never bind; median of ` +
      `${ROUNDS} interleaved rounds of ${SECONDS} s.\n`,
  );
  console.log("| library | decision | connections × in flight | calls/s | p50 ms | p99 ms | server µs/call |");
  console.log("|---|---|---|---:|---:|---:|---:|");
  for (const r of results) {
    console.log(
      `| ${r.library} | ${r.scenario} | ${r.shape} | ${Math.round(r.ops).toLocaleString("en-US")} | ${r.p50.toFixed(3)} | ${
        r.p99.toFixed(3)
      } | ${r.server.toFixed(1)} |`,
    );
  }
  console.log(
    "\nrate-limiter-flexible's script is a fixed-window counter (INCRBY + PTTL) that cannot return a future grant time; " +
      "sluice's reserve also writes a reservation record (cancel, idempotent retries) and, for a window, one zset entry per reservation.",
  );
} finally {
  admin.disconnect();
  await server.stop();
}
