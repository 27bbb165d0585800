/**
 * The tiny client interface sluice needs from a Redis library, and the one place scripts are sent:
 * EVALSHA first, EVAL on NOSCRIPT (matched as a substring, because Redis 7 prefixes script errors
 * with `ERR ` and clients wrap messages differently). Never relies on SCRIPT LOAD having happened,
 * so a flushed script cache, a restarted server or a failover only costs one EVAL.
 *
 * @module
 */
import type { Script } from "./script.ts";

/**
 * What sluice needs from a Redis client: run a script by SHA or by source, with keys kept apart
 * from arguments (cluster clients route on the keys). Ready adapters: {@link fromNodeRedis},
 * {@link fromIoredis}; for another client, implement these two methods (and `isReplyError` if the
 * client's error replies are not recognisable by their message).
 *
 * @example
 * ```ts
 * import type { RedisScriptClient } from "sluice/redis";
 * const client: RedisScriptClient = {
 *   evalsha: (sha, keys, args) => myRedis.send("EVALSHA", [sha, String(keys.length), ...keys, ...args]),
 *   eval: (script, keys, args) => myRedis.send("EVAL", [script, String(keys.length), ...keys, ...args]),
 * };
 * ```
 */
export interface RedisScriptClient {
  /** `EVALSHA sha numkeys ...keys ...args`; rejects with the server's error reply (e.g. NOSCRIPT). */
  evalsha(sha: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /** `EVAL script numkeys ...keys ...args`. */
  eval(script: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /**
   * True when `error` is an error REPLY from the server (as opposed to a connection problem).
   * Error replies other than NOSCRIPT and the transient ones (LOADING, BUSY, TRYAGAIN, …) mean a
   * misconfiguration and are never hidden by `failure: "open"`.
   * @default a check on the message: an upper-case error code such as `ERR`, `WRONGTYPE`, `CROSSSLOT`
   */
  isReplyError?(error: unknown): boolean;
}

/** Server error codes that mean "not now" rather than "wrong": they count as unavailability. */
const TRANSIENT_CODES = new Set([
  "LOADING",
  "BUSY",
  "TRYAGAIN",
  "CLUSTERDOWN",
  "MASTERDOWN",
  "READONLY",
  "NOREPLICAS",
  "MISCONF",
  "OOM",
]);

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : typeof error === "string" ? error : "";
}

/** The error code of a reply (`ERR`, `NOSCRIPT`, …), skipping the `ERR ` prefix Redis 7 adds to script errors. */
export function replyCode(error: unknown): string {
  const words = messageOf(error).trim().split(/\s+/, 3);
  if (words[0] === "ERR" && words[1] !== undefined && /^[A-Z]{3,}$/.test(words[1])) return words[1];
  return words[0] ?? "";
}

/** Default reply-error test: the message starts with an upper-case error code. */
export function looksLikeReplyError(error: unknown): boolean {
  return /^[A-Z][A-Z_]{1,}( |$)/.test(messageOf(error));
}

/** True when a script call failed only because the server does not have the script cached. */
export function isNoScript(error: unknown): boolean {
  return messageOf(error).includes("NOSCRIPT");
}

/**
 * How a failed call is classified: `unavailable` (timeout, connection, or a transient server
 * state — the failure policy decides) or `error` (a reply that means misconfiguration — always
 * surfaced, never failed open).
 */
export function classify(client: RedisScriptClient, error: unknown): "unavailable" | "error" {
  const isReply = client.isReplyError ? client.isReplyError(error) : looksLikeReplyError(error);
  if (!isReply) return "unavailable";
  return TRANSIENT_CODES.has(replyCode(error)) ? "unavailable" : "error";
}

/**
 * Runs `script`: EVALSHA, then EVAL if the server answers NOSCRIPT. The EVALSHA goes out
 * synchronously, so calls reach one connection in the order they were made.
 */
export function runScript(
  client: RedisScriptClient,
  script: Script,
  keys: readonly string[],
  args: readonly string[],
): Promise<unknown> {
  let sent: Promise<unknown>;
  try {
    sent = client.evalsha(script.sha, keys, args);
  } catch (error) {
    sent = Promise.reject(error);
  }
  return sent.catch((error: unknown) => {
    if (!isNoScript(error)) throw error;
    return client.eval(script.source, keys, args);
  });
}

/**
 * Reads a script reply `{code, delay µs, at µs}`. Integers may come back as numbers, strings,
 * bigints or buffers depending on the client and protocol; anything else is a protocol error.
 */
export function parseReply(reply: unknown): { code: number; delay: number; at: number } {
  if (!Array.isArray(reply) || reply.length < 3) {
    throw new TypeError(`unexpected reply from a sluice script: ${JSON.stringify(reply)}`);
  }
  const code = toInteger(reply[0]);
  const delay = toInteger(reply[1]);
  const at = toInteger(reply[2]);
  return { code, delay, at };
}

/** Reads a reserve batch's reply: `count` triples `{code, delay µs, at µs}`, one per request, in order. */
export function parseBatchReply(reply: unknown, count: number): { code: number; delay: number; at: number }[] {
  if (!Array.isArray(reply) || reply.length !== 3 * count) {
    throw new TypeError(`unexpected reply from a sluice script: ${JSON.stringify(reply)}`);
  }
  const replies = new Array<{ code: number; delay: number; at: number }>(count);
  for (let i = 0; i < count; i++) {
    replies[i] = { code: toInteger(reply[3 * i]), delay: toInteger(reply[3 * i + 1]), at: toInteger(reply[3 * i + 2]) };
  }
  return replies;
}

function toInteger(value: unknown): number {
  const n = typeof value === "number" ? value
    : typeof value === "bigint" ? Number(value)
    : typeof value === "string" ? Number(value)
    : value instanceof Uint8Array ? Number(new TextDecoder().decode(value))
    : NaN;
  if (!Number.isSafeInteger(n)) throw new TypeError(`unexpected value in a sluice script reply: ${String(value)}`);
  return n;
}
