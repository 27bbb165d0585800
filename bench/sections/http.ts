/**
 * Section 4 — HTTP, against local `node:http` servers (127.0.0.1 only) that run in a child process
 * (`bench/http/remote-server.ts`), so the server's work is not counted against the clients:
 * - overhead: µs per request with a limit that never binds, sequential (1 caller) and 100
 *   concurrent callers, interleaved rounds, median: sluice's throttled fetch (its defaults, and
 *   without the per-attempt `timeout`) beside raw `fetch`, raw `fetch` given an `AbortSignal` and a
 *   timer (what any per-attempt timeout costs in the runtime), and ky; `sluice/undici`'s interceptor
 *   beside a plain undici `Agent`;
 * - strict server: `callers` concurrent callers, `requests` requests, server limit N per window;
 *   429s received, requests that failed for good, and the achieved rate.
 *
 * @module
 */
import ky from "ky";
import { Agent, type Dispatcher } from "undici";
import { throttle } from "../../src/integrations/undici/index.ts";
import { SmoothLimiter } from "../../src/index.ts";
import { ms, num, percent, table } from "../lib/format.ts";
import { gc, rotate, sleep } from "../lib/measure.ts";
import { median, percentile, steadyUtilisation } from "../lib/stats.ts";
import { createSluiceFetch, type FetchLike } from "../http/sluice-client.ts";
import { startRemoteServer } from "../http/remote-server.ts";

export interface HttpOptions {
  rounds: number;
  warmup: number;
  /** Requests per overhead cell. */
  overheadRequests: number;
  /** Concurrent callers of the concurrent overhead cells. */
  overheadCallers: number;
  /** Strict-server run. */
  limit: number;
  window: number;
  callers: number;
  requests: number;
}

/** The two overhead modes: one caller at a time, and `overheadCallers` at once. */
export const MODES = ["sequential", "concurrent"] as const;
export type Mode = (typeof MODES)[number];

/** Undici agents of one run, closed at its end. */
interface Agents {
  plain: Dispatcher;
  throttled: Dispatcher;
}

interface Client {
  id: string;
  label: string;
  config: string;
  /** The client it is compared with ("overhead vs"), when not raw fetch. */
  baseline?: string;
  /** One logical request; resolves with the final status (after the client's own retries). */
  make(kind: "open" | "strict", o: HttpOptions, agents: Agents): ((url: string) => Promise<number>) | undefined;
}

async function statusOf(response: Response): Promise<number> {
  await response.arrayBuffer();
  return response.status;
}

/** A request through an undici dispatcher, body read: the undici counterpart of `fetch(url).then(statusOf)`. */
async function undiciGet(dispatcher: Dispatcher, url: string): Promise<number> {
  const { origin, pathname, search } = new URL(url);
  const { statusCode, body } = await dispatcher.request({ origin, path: pathname + search, method: "GET" });
  await body.arrayBuffer();
  return statusCode;
}

const neverBinds = () => new SmoothLimiter({ limit: 1e9, interval: 1e6, burst: 1e9 });

export const CLIENTS: readonly Client[] = [
  {
    id: "fetch",
    label: "raw `fetch`",
    config: "global `fetch` (undici), no retries",
    make: () => (url) => fetch(url).then(statusOf),
  },
  {
    id: "fetch-signal",
    label: "raw `fetch` + signal",
    config: "global `fetch` given an `AbortController`'s signal and a 60 s timer per request: what any per-attempt timeout costs in the runtime",
    make: () => (url) => {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), 60_000);
      return fetch(url, { signal: controller.signal }).then(statusOf).finally(() => clearTimeout(timer));
    },
  },
  {
    id: "ky",
    label: "ky",
    config: "`ky.get(url)` with its defaults (retry limit 2, honours `Retry-After` on 429, 10 s timeout)",
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
    config: "`createThrottledFetch` with its defaults (no per-attempt `timeout`, like `fetch`): a limit that never binds (overhead), or `{ limit, interval }` = the server's documented limit (a window counted from each response)",
    make: (kind, o) => {
      const f: FetchLike | undefined = createSluiceFetch(kind === "open" ? {} : { limit: o.limit, window: o.window });
      return f === undefined ? undefined : (url) => f(url).then(statusOf);
    },
  },
  {
    id: "sluice-timeout",
    label: "sluice, `timeout: 60_000`",
    config: "the same with a 60 s per-attempt timeout: a signal, controller and timer per attempt (overhead only)",
    make: (kind) => {
      if (kind !== "open") return undefined;
      const f = createSluiceFetch({ timeout: 60_000 })!;
      return (url) => f(url).then(statusOf);
    },
  },
  {
    id: "agent",
    label: "undici `Agent`",
    config: "`agent.request(…)` on a plain undici Agent (overhead only)",
    make: (kind, _o, agents) => (kind === "open" ? (url) => undiciGet(agents.plain, url) : undefined),
  },
  {
    id: "agent-throttle",
    label: "undici `Agent` + `throttle`",
    config: "the same Agent composed with `sluice/undici`'s `throttle({ limiter })`, a limit that never binds (overhead only)",
    baseline: "agent",
    make: (kind, _o, agents) => (kind === "open" ? (url) => undiciGet(agents.throttled, url) : undefined),
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
  /** µs per request (median), per mode and client; undefined when the client has no such cell. */
  overhead: Record<Mode, Record<string, number | undefined>>;
  /**
   * Overhead over the baseline as a fraction, per mode and client: the median over rounds of the
   * ratio within each round — paired, so that load shifting on a shared machine between rounds
   * cancels out (the baseline ran in the same round, next to it).
   */
  paired: Record<Mode, Record<string, number | undefined>>;
  /** The 25th and 75th percentiles of those per-round ratios: how far one round's figure strays on this machine. */
  spread: Record<Mode, Record<string, [number, number] | undefined>>;
  /**
   * The client process's CPU time (user + system) per request, µs, median over rounds: what each
   * client costs the machine, steadier than wall time when other work shares the cores.
   */
  cpu: Record<Mode, Record<string, number | undefined>>;
  /**
   * sluice's own time per call, µs, wall clock (median over rounds, 100 calls at a time): the throttled
   * fetch with a `fetch` that answers at once, minus that `fetch` alone — what the wrapper costs
   * with no network noise, the figure the issue's tester gave as 7–10 µs.
   */
  ownCost: { defaults: number; timeout: number };
  strict: Record<string, { ok: number; failed: number; got429: number; wallMs: number; achievedPerWindow: number | undefined } | undefined>;
}

/** Overhead of `id` over its baseline (raw fetch unless the client names another), as a fraction (paired, see {@link HttpResult.paired}). */
export function overheadOf(r: HttpResult, mode: Mode, id: string): number | undefined {
  return r.paired[mode][id];
}

const baselineOf = (c: Client): string => c.baseline ?? "fetch";

export async function runHttp(o: HttpOptions, log: (line: string) => void): Promise<HttpResult> {
  const agents: Agents = { plain: new Agent(), throttled: new Agent().compose(throttle({ limiter: neverBinds() })) };
  const open = await startRemoteServer({ kind: "open" });
  const perCell = () => Object.fromEntries(MODES.map((m) => [m, Object.fromEntries(CLIENTS.map((c) => [c.id, [] as number[]]))])) as Record<Mode, Record<string, number[]>>;
  const samples = perCell();
  const cpuSamples = perCell();
  try {
    const calls = CLIENTS.map((c) => ({ id: c.id, call: c.make("open", o, agents) }));
    for (let round = 0; round < o.warmup + o.rounds; round++) {
      for (const mode of MODES) {
        const callers = mode === "sequential" ? 1 : o.overheadCallers;
        for (const { id, call } of rotate(calls, round)) {
          if (call === undefined) continue;
          // Each cell starts from a collected heap: the garbage of the cell before is not charged to it.
          // Then a short untimed warm-up: the forced GC also drops the optimized code of functions
          // whose per-request objects all died with it (V8 "embedded weak objects cleared"), which a
          // process with requests in flight never sees; without it each cell timed its own re-warming
          // (see bench/README.md: +15-20 µs a request for the undici interceptor, +1-4 µs without).
          gc();
          await drive(call, open.url, callers, Math.ceil(o.overheadRequests / 5));
          const t0 = performance.now();
          const cpu0 = process.cpuUsage();
          await drive(call, open.url, callers, o.overheadRequests);
          if (round >= o.warmup) {
            samples[mode][id]!.push(((performance.now() - t0) * 1000) / o.overheadRequests);
            const cpu = process.cpuUsage(cpu0);
            cpuSamples[mode][id]!.push((cpu.user + cpu.system) / o.overheadRequests);
          }
        }
      }
      log(`  http overhead round ${round + 1}/${o.warmup + o.rounds}`);
    }
  } finally {
    await open.close();
  }
  const overhead = Object.fromEntries(MODES.map((m) => [m, Object.fromEntries(CLIENTS.map((c) => {
    const xs = samples[m][c.id]!;
    return [c.id, xs.length === 0 ? undefined : median(xs)];
  }))])) as HttpResult["overhead"];
  const ratios = (m: Mode, c: Client): number[] | undefined => {
    const xs = samples[m][c.id]!;
    const base = samples[m][baselineOf(c)]!;
    return xs.length === 0 || xs.length !== base.length ? undefined : xs.map((x, i) => x / base[i]! - 1);
  };
  const paired = Object.fromEntries(MODES.map((m) => [m, Object.fromEntries(CLIENTS.map((c) => {
    const r = ratios(m, c);
    return [c.id, r === undefined ? undefined : median(r)];
  }))])) as HttpResult["paired"];
  const spread = Object.fromEntries(MODES.map((m) => [m, Object.fromEntries(CLIENTS.map((c) => {
    const r = ratios(m, c);
    return [c.id, r === undefined ? undefined : [percentile(r, 25), percentile(r, 75)]];
  }))])) as HttpResult["spread"];
  const cpu = Object.fromEntries(MODES.map((m) => [m, Object.fromEntries(CLIENTS.map((c) => {
    const xs = cpuSamples[m][c.id]!;
    return [c.id, xs.length === 0 ? undefined : median(xs)];
  }))])) as HttpResult["cpu"];

  const strict: HttpResult["strict"] = {};
  const server = await startRemoteServer({ kind: "strict", limit: o.limit, window: o.window });
  try {
    for (const client of CLIENTS) {
      const call = client.make("strict", o, agents);
      if (call === undefined) continue;
      await sleep(o.window + 100); // the previous client's requests leave the server's window
      await server.reset();
      const t0 = performance.now();
      const r = await drive(call, server.url, o.callers, o.requests);
      const wallMs = performance.now() - t0;
      const stats = await server.stats();
      const accepted = stats.accepted;
      // Steady achieved rate, as in section 2 (undefined when fewer than a window's worth got through).
      const achievedPerWindow = accepted.length > o.limit ? steadyUtilisation(accepted, o.limit, o.window) * o.limit : undefined;
      strict[client.id] = { ok: r.ok, failed: r.failed, got429: stats.rejected, wallMs, achievedPerWindow };
      log(`  http strict: ${client.id}`);
    }
  } finally {
    await server.close();
    await Promise.all([agents.plain.close(), agents.throttled.close()]);
  }
  return { overhead, paired, spread, cpu, ownCost: await ownCost(o), strict };
}

/** See {@link HttpResult.ownCost}. */
async function ownCost(o: HttpOptions): Promise<HttpResult["ownCost"]> {
  const instant = (() => Promise.resolve(new Response(null))) as FetchLike;
  const make = (timeout?: number) => createSluiceFetch({ fetch: instant, ...(timeout !== undefined && { timeout }) })!;
  const cells: Record<string, FetchLike> = { bare: instant, defaults: make(), timeout: make(60_000) };
  const samples: Record<string, number[]> = { bare: [], defaults: [], timeout: [] };
  const calls = 20_000;
  for (let round = 0; round < o.warmup + o.rounds; round++) {
    for (const id of rotate(Object.keys(cells), round)) {
      const f = cells[id]!;
      const t0 = performance.now();
      for (let i = 0; i < calls / 100; i++) await Promise.all(Array.from({ length: 100 }, () => f("http://127.0.0.1:9/")));
      if (round >= o.warmup) samples[id]!.push(((performance.now() - t0) * 1000) / calls);
    }
  }
  const bare = median(samples.bare!);
  return { defaults: median(samples.defaults!) - bare, timeout: median(samples.timeout!) - bare };
}

export function httpMarkdown(r: HttpResult, o: HttpOptions): string {
  const over = table(
    ["Client", "Configuration", ...MODES.flatMap((m) => [`${m}: µs per request`, `${m}: overhead (middle half of rounds)`, `${m}: client CPU µs per request`])],
    CLIENTS.map((c) => [
      c.label,
      c.config,
      ...MODES.flatMap((m) => {
        const v = r.overhead[m][c.id];
        const over = overheadOf(r, m, c.id);
        const iqr = r.spread[m][c.id];
        const cpu = r.cpu[m][c.id];
        const vs = c.baseline === undefined ? "" : " vs Agent";
        const signed = (x: number) => `${x >= 0 ? "+" : ""}${percent(x)}`;
        const overCell = c.id === "fetch" || c.id === "agent"
          ? "(baseline)"
          : over === undefined ? "—" : `${signed(over)}${vs}${iqr === undefined ? "" : ` (${signed(iqr[0])} … ${signed(iqr[1])})`}`;
        return v === undefined ? ["—", "—", "—"] : [num(v), overCell, cpu === undefined ? "—" : num(cpu)];
      }),
    ]),
    ["l", "l", "r", "r", "r", "r", "r", "r"],
  );
  const strictClients = CLIENTS.filter((c) => r.strict[c.id] !== undefined);
  const strict = table(
    ["Client", "Succeeded", "Failed for good", "429s received", "Wall time", `Achieved rate (per ${o.window} ms; limit ${o.limit})`],
    strictClients.map((c) => {
      const s = r.strict[c.id]!;
      const rate = s.achievedPerWindow === undefined ? `— (only ${s.ok} accepted)` : num(s.achievedPerWindow);
      return [c.label, String(s.ok), String(s.failed), String(s.got429), ms(s.wallMs), rate];
    }),
    ["l", "r", "r", "r", "r", "r"],
  );
  return [
    `Open server (keep-alive, in a child process), limit never binds: ${o.overheadRequests.toLocaleString("en-US")} requests per cell, ` +
      `sequential (1 caller) and ${o.overheadCallers} concurrent callers, median of ${o.rounds} interleaved rounds; ` +
      `each cell starts with a forced GC and ${Math.ceil(o.overheadRequests / 5).toLocaleString("en-US")} untimed requests (see bench/README.md). ` +
      "Overhead is relative to raw `fetch` (the undici interceptor: relative to the plain Agent), the median over rounds of the ratio within each round " +
      "(paired: the clients of a round ran one after another under the same load); in brackets the 25th and 75th percentiles of those per-round ratios, " +
      "which show how far a single round strays on this machine. Client CPU: the bench process's user + system time per request (the server runs in its own process).",
    "",
    over,
    "",
    "![HTTP overhead](http.svg)",
    "",
    `sluice's own time per call, wall clock, on a warm long-lived client with a \`fetch\` that answers at once (100 calls at a time, minus that fetch alone, median of ${o.rounds} rounds; \`bench/fetch-cpu.ts\` measures process CPU, GC included, and a fresh client): ` +
      `${num(r.ownCost.defaults)} µs with the defaults, ${num(r.ownCost.timeout)} µs with \`timeout: 60_000\`. ` +
      "Over a real socket compare the `timeout: 60_000` row with the defaults for what a signal and a timer per attempt cost, and \"raw `fetch` + signal\" for fetch's own share of it.",
    "",
    `Strict server (at most ${o.limit} accepted in any rolling ${o.window} ms, else 429 + \`Retry-After\` in whole seconds): ${o.callers} callers, ${o.requests} requests, one client at a time. ` +
      "Achieved rate: accepted requests per window in the steady part, measured at the server as in section 2.",
    "",
    strict,
  ].join("\n");
}

/** A bar chart of µs per request, per mode and client (hand-written SVG, like the saturation chart). */
export function httpSvg(r: HttpResult, title: string): string {
  const rowH = 18;
  const labelW = 210;
  const barW = 420;
  const rows = MODES.flatMap((m) => [{ head: m, id: undefined as string | undefined }, ...CLIENTS.map((c) => ({ head: m, id: c.id }))]);
  const max = Math.max(...MODES.flatMap((m) => CLIENTS.map((c) => r.overhead[m][c.id] ?? 0)));
  const esc = (t: string) => t.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll("`", "");
  const height = 40 + rows.length * rowH;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${labelW + barW + 140}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="8" y="18" font-weight="bold">${esc(title)}</text>`,
  ];
  rows.forEach((row, i) => {
    const y = 32 + i * rowH;
    if (row.id === undefined) {
      out.push(`<text x="8" y="${y + 13}" font-weight="bold">${row.head}</text>`);
      return;
    }
    const client = CLIENTS.find((c) => c.id === row.id)!;
    const v = r.overhead[row.head as Mode][row.id];
    out.push(`<text x="16" y="${y + 13}">${esc(client.label)}</text>`);
    if (v === undefined) return;
    const w = (v / max) * barW;
    const fill = row.id.startsWith("sluice") || row.id === "agent-throttle" ? "#2a6fdb" : "#9aa5b1";
    const over = overheadOf(r, row.head as Mode, row.id);
    const note = row.id === "fetch" || row.id === "agent" ? "" : over === undefined ? "" : ` (${over >= 0 ? "+" : ""}${(over * 100).toFixed(1)} %)`;
    out.push(`<rect x="${labelW}" y="${y + 2}" width="${w.toFixed(1)}" height="${rowH - 5}" fill="${fill}"/>`);
    out.push(`<text x="${labelW + w + 6}" y="${y + 13}">${num(v)} µs${note}</text>`);
  });
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}
