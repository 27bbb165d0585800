/**
 * Ready adapters from the two common Node Redis clients to {@link RedisScriptClient}. They are
 * typed structurally (no import of either library), so neither is needed unless you use it; both
 * are optional peer dependencies.
 *
 * @module
 */
import type { RedisScriptClient } from "./client.ts";

/** The part of a node-redis (`redis` / `@redis/client`, v4–v6) client or cluster sluice uses. */
export interface NodeRedisLike {
  /** Runs a loaded script by its SHA1 (node-redis v4+ signature). */
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /** Runs a script's source (node-redis v4+ signature). */
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

/** The part of an ioredis `Redis` or `Cluster` sluice uses. */
export interface IoredisLike {
  /** Runs a loaded script by its SHA1 (ioredis signature). */
  evalsha(sha: string, numkeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  /** Runs a script's source (ioredis signature). */
  eval(script: string, numkeys: number, ...keysAndArgs: string[]): Promise<unknown>;
}

/** True when `error` or one of its prototypes' constructors has one of `names`. */
function constructedBy(error: unknown, names: ReadonlySet<string>): boolean {
  let proto: unknown = typeof error === "object" && error !== null ? Object.getPrototypeOf(error) : null;
  while (proto !== null && proto !== Object.prototype) {
    const ctor = (proto as { constructor?: { name?: unknown } }).constructor;
    if (typeof ctor?.name === "string" && names.has(ctor.name)) return true;
    proto = Object.getPrototypeOf(proto);
  }
  return false;
}

const NODE_REDIS_REPLY_ERRORS = new Set(["ErrorReply", "SimpleError", "BlobError"]);

/**
 * Adapts a node-redis client (`createClient()` or `createCluster()`, v4 to v6).
 *
 * Recommended client settings: `disableOfflineQueue: true`, so commands fail fast while
 * disconnected instead of waiting in memory until the per-call `timeout`.
 *
 * @example
 * ```ts
 * import { createClient } from "redis";
 * import { fromNodeRedis, RedisStore } from "sluice/redis";
 *
 * const redis = await createClient({ url: "redis://127.0.0.1:6379" }).connect();
 * const store = new RedisStore({ client: fromNodeRedis(redis), name: "github" });
 * ```
 */
export function fromNodeRedis(client: NodeRedisLike): RedisScriptClient {
  if (typeof client?.evalSha !== "function" || typeof client.eval !== "function") {
    throw new TypeError("`client` must be a node-redis client (with evalSha and eval), got " + typeof client);
  }
  return {
    evalsha: (sha, keys, args) => client.evalSha(sha, { keys: [...keys], arguments: [...args] }),
    eval: (script, keys, args) => client.eval(script, { keys: [...keys], arguments: [...args] }),
    isReplyError: (error) => constructedBy(error, NODE_REDIS_REPLY_ERRORS),
  };
}

/**
 * Adapts an ioredis client (`new Redis()` or `new Cluster()`).
 *
 * Recommended client settings: `enableOfflineQueue: false` and a small `maxRetriesPerRequest`, so
 * commands fail fast while disconnected. (A command ioredis resends after a reconnect is harmless:
 * reservations are idempotent by id.)
 *
 * @example
 * ```ts
 * import { Redis } from "ioredis";
 * import { fromIoredis, RedisStore } from "sluice/redis";
 *
 * const store = new RedisStore({ client: fromIoredis(new Redis()), name: "github" });
 * ```
 */
export function fromIoredis(client: IoredisLike): RedisScriptClient {
  if (typeof client?.evalsha !== "function" || typeof client.eval !== "function") {
    throw new TypeError("`client` must be an ioredis client (with evalsha and eval), got " + typeof client);
  }
  return {
    evalsha: (sha, keys, args) => client.evalsha(sha, keys.length, ...keys, ...args),
    eval: (script, keys, args) => client.eval(script, keys.length, ...keys, ...args),
    isReplyError: (error) => (error as { name?: unknown } | null)?.name === "ReplyError",
  };
}
