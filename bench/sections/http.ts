/**
 * Section 4 — HTTP, against local `node:http` servers (127.0.0.1 only):
 * - overhead: throughput with a limit that never binds, sluice's throttled fetch vs raw `fetch` and
 *   ky, interleaved rounds, median; overhead % relative to raw fetch;
 * - strict server: `callers` concurrent callers, `requests` requests, server limit N per window;
 *   429s received, requests that failed for good, and the achieved rate.
 *
 * sluice's throttled fetch plugs in through `bench/http/sluice-client.ts`; until it exists its rows
 * read "pending".
 *
 * @module
 */
import ky from "ky";
import { ms, num, percent, table } from "../lib/format.ts";
import { rotate, sleep } from "../lib/measure.ts";
import { median, steadyUtilisation } from "../lib/stats.ts";
import { createSluiceFetch, type FetchLike } from "../http/sluice-client.ts";
import { startServer } from "../http/server.ts";

export interface HttpOptions {
  rounds: number;
  warmup: number;
  /** Requests per overhead cell, and callers issuing them. */
  overheadRequests: number;
  overheadCallers: number;
  /** Strict-server run. */
  limit: number;
  window: number;
  callers: number;
  requests: number;
}

interface Client {
  id: string;
  label: string;
  config: string;
  /** One logical request; resolves with the final status (after the client's own retries). */
  make(kind: "open" | "strict", o: HttpOptions): ((url: string) => Promise<number>) | undefined;
}

async function statusOf(response: Response): Promise<number> {
  await response.arrayBuffer();
  return response.status;
}

export const CLIENTS: readonly Client[] = [
  {
    id: "fetch",
    label: "raw `fetch`",
    config: "global `fetch` (undici), no retries",
    make: () => (url) => fetch(url).then(statusOf),
  },
  {
    id: "ky",
    label: "ky",
    config: "`ky.get(url)` with its defaults (retry limit 2, honours `Retry-After` on 429)",
    make: () => (url) =>
      ky.get(url).then(statusOf, (error: unknown) => {
        const status = (error as { response?: Response }).response?.status;
        if (status === undefined) throw error;
        return status;
      }),
  },
  {
    id: "sluice",
    label: "sluice throttled fetch",
    config: "`createThrottledFetch`: a limit that never binds (overhead), or `{ limit, interval }` = the server's documented limit (a window counted from each response)",
    make: (kind, o) => {
      const f: FetchLike | undefined = createSluiceFetch(kind === "open" ? {} : { limit: o.limit, window: o.window });
      return f === undefined ? undefined : (url) => f(url).then(statusOf);
    },
  },
];

async function drive(call: (url: string) => Promise<number>, url: string, callers: number, total: number): Promise<{ ok: number; failed: number; statuses: Map<number, number> }> {
  let next = 0;
  let ok = 0;
  let failed = 0;
  const statuses = new Map<number, number>();
  const caller = async (): Promise<void> => {
    while (next < total) {
      next++;
      try {
        const status = await call(url);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status >= 200 && status < 300) ok++;
        else failed++;
      } catch {
        failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: callers }, caller));
  return { ok, failed, statuses };
}

export interface HttpResult {
  /** µs per request (median), per client; undefined when pending. */
  overhead: Record<string, number | undefined>;
  strict: Record<string, { ok: number; failed: number; got429: number; wallMs: number; achievedPerWindow: number | undefined } | undefined>;
}

export async function runHttp(o: HttpOptions, log: (line: string) => void): Promise<HttpResult> {
  const open = await startServer({ kind: "open" });
  const samples: Record<string, number[]> = Object.fromEntries(CLIENTS.map((c) => [c.id, []]));
  try {
    for (let round = 0; round < o.warmup + o.rounds; round++) {
      for (const client of rotate(CLIENTS, round)) {
        const call = client.make("open", o);
        if (call === undefined) continue;
        const t0 = performance.now();
        await drive(call, open.url, o.overheadCallers, o.overheadRequests);
        if (round >= o.warmup) samples[client.id]!.push(((performance.now() - t0) * 1000) / o.overheadRequests);
      }
      log(`  http overhead round ${round + 1}/${o.warmup + o.rounds}`);
    }
  } finally {
    await open.close();
  }
  const overhead = Object.fromEntries(CLIENTS.map((c) => [c.id, samples[c.id]!.length === 0 ? undefined : median(samples[c.id]!)]));

  const strict: HttpResult["strict"] = {};
  const server = await startServer({ kind: "strict", limit: o.limit, window: o.window });
  try {
    for (const client of CLIENTS) {
      const call = client.make("strict", o);
      if (call === undefined) {
        strict[client.id] = undefined;
        continue;
      }
      await sleep(o.window + 100); // the previous client's requests leave the server's window
      server.reset();
      const t0 = performance.now();
      const r = await drive(call, server.url, o.callers, o.requests);
      const wallMs = performance.now() - t0;
      const accepted = server.stats.accepted;
      // Steady achieved rate, as in section 2 (undefined when fewer than a window's worth got through).
      const achievedPerWindow = accepted.length > o.limit ? steadyUtilisation(accepted, o.limit, o.window) * o.limit : undefined;
      strict[client.id] = { ok: r.ok, failed: r.failed, got429: server.stats.rejected, wallMs, achievedPerWindow };
      log(`  http strict: ${client.id}`);
    }
  } finally {
    await server.close();
  }
  return { overhead, strict };
}

export function httpMarkdown(r: HttpResult, o: HttpOptions): string {
  const raw = r.overhead.fetch;
  const over = table(
    ["Client", "Configuration", "µs per request", "Requests/s", "Overhead vs raw fetch"],
    CLIENTS.map((c) => {
      const v = r.overhead[c.id];
      if (v === undefined) return [c.label, c.config, "pending", "pending", "pending"];
      return [c.label, c.config, num(v), num(1e6 / v), raw === undefined ? "—" : percent(v / raw - 1)];
    }),
    ["l", "l", "r", "r", "r"],
  );
  const strict = table(
    ["Client", "Succeeded", "Failed for good", "429s received", "Wall time", `Achieved rate (per ${o.window} ms; limit ${o.limit})`],
    CLIENTS.map((c) => {
      const s = r.strict[c.id];
      if (s === undefined) return [c.label, "pending", "pending", "pending", "pending", "pending"];
      const rate = s.achievedPerWindow === undefined ? `— (only ${s.ok} accepted)` : num(s.achievedPerWindow);
      return [c.label, String(s.ok), String(s.failed), String(s.got429), ms(s.wallMs), rate];
    }),
    ["l", "r", "r", "r", "r", "r"],
  );
  return [
    `Open server, limit never binds: ${o.overheadCallers} callers, ${o.overheadRequests.toLocaleString("en-US")} requests per cell, median of ${o.rounds} interleaved rounds.`,
    "",
    over,
    "",
    `Strict server (at most ${o.limit} accepted in any rolling ${o.window} ms, else 429 + \`Retry-After\` in whole seconds): ${o.callers} callers, ${o.requests} requests, one client at a time. ` +
      "Achieved rate: accepted requests per window in the steady part, measured at the server as in section 2.",
    "",
    strict,
  ].join("\n");
}
