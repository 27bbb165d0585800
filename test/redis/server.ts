/**
 * Test helper: a private redis-server per suite, on 127.0.0.1 and a free port, without persistence,
 * stopped by pid. A missing `redis-server` fails the run with a clear message, unless the user opts
 * out explicitly with SLUICE_SKIP_REDIS=1 — and then the skip is announced, never silent.
 */
import { spawnSync } from "node:child_process";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe } from "vitest";
import { BINARY, type RedisServer, startRedis } from "./redis-process.ts";

export { freePort, type RedisServer, startRedis } from "./redis-process.ts";
const SKIP = process.env.SLUICE_SKIP_REDIS === "1";

function detect(): string | undefined {
  const probe = spawnSync(BINARY, ["--version"], { encoding: "utf8" });
  if (probe.error !== undefined || probe.status !== 0) return undefined;
  return probe.stdout.trim();
}

/** `redis-server --version`, or undefined when the Redis suites are skipped. */
export const REDIS_VERSION: string | undefined = (() => {
  if (SKIP) {
    console.warn("\n*** Redis suites SKIPPED (SLUICE_SKIP_REDIS=1): sluice/redis is NOT tested in this run. ***\n");
    return undefined;
  }
  const version = detect();
  if (version !== undefined) return version;
  throw new Error(
    `redis-server not found (looked for ${JSON.stringify(BINARY)}). The sluice/redis tests need a real Redis: ` +
      "run `bash scripts/ensure-redis.sh` (Debian/Ubuntu: apt-get install -y redis-server), set " +
      "SLUICE_REDIS_SERVER=/path/to/redis-server, or set SLUICE_SKIP_REDIS=1 to skip these suites explicitly.",
  );
})();

/** `describe` for suites that need Redis: skipped (loudly, above) only under SLUICE_SKIP_REDIS=1. */
export const describeRedis: typeof describe.skip = REDIS_VERSION === undefined ? describe.skip : describe;


/**
 * Starts a private redis-server for the enclosing suite with an ioredis client on it, hands both to
 * `use` once ready, and stops them after the suite.
 */
export function useRedis(use: (server: RedisServer, redis: Redis) => void): void {
  let server: RedisServer | undefined;
  let redis: Redis | undefined;
  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.port, "127.0.0.1");
    use(server, redis);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });
}

/**
 * The stored record of reservation `<batch>/<i>`: entry `i` of the record string `<prefix>r:<batch>`
 * (`"<at>|<n>"`, the tombstone `"x"`), or null when nothing is recorded.
 */
export async function recordOf(redis: Redis, prefix: string, id: string): Promise<string | null> {
  const slash = id.lastIndexOf("/");
  const value = await redis.get(`${prefix}r:${id.slice(0, slash)}`);
  const entry = value?.split(",")[Number(id.slice(slash + 1)) - 1];
  return entry === undefined || entry === "" ? null : entry;
}
