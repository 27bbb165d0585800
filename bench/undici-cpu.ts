/**
 * sluice/undici's own CPU per request: the interceptor in front of a dispatcher that answers at
 * once (a stub that plays undici's handler callbacks in a microtask), so every microsecond measured
 * is the interceptor's, not the network's. Compares, in interleaved rounds, the stub called directly
 * with the same stub behind `throttle({ limiter })` (a limit that never binds), sequentially and 100
 * requests at a time. Figures are process CPU time per request (user + system), steadier than wall
 * time on a loaded machine; medians over the rounds.
 *
 *   node --expose-gc bench/undici-cpu.ts [rounds, default 11] [--baseline=/path/to/other/checkout]
 *
 * `--baseline` adds that checkout's interceptor as a third contender in the same rounds.
 *
 * @module
 */
import { WindowLimiter } from "../src/index.ts";
import { throttle } from "../src/integrations/undici/index.ts";
import type { Dispatch, DispatchHandler, DispatchRequest } from "../src/integrations/undici/types.ts";

const args = process.argv.slice(2);
const rounds = Number(args.find((a) => !a.startsWith("--")) ?? 11);
const baseline = args.find((a) => a.startsWith("--baseline="))?.slice("--baseline=".length);
const CALLS = 20_000;
const CONCURRENT = 100;
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

const controller = { abort() {}, pause() {}, resume() {}, aborted: false, reason: null, paused: false };
// What a keep-alive server's plain answer carries: no rate-limit headers.
const headers = { "content-type": "text/plain", "content-length": "2", date: "Mon, 23 Nov 2026 00:00:00 GMT", connection: "keep-alive" };
const chunk = new TextEncoder().encode("ok");
const stub = ((_request: DispatchRequest, handler: DispatchHandler): boolean => {
  queueMicrotask(() => {
    handler.onRequestStart?.(controller as never, {});
    handler.onResponseStart?.(controller as never, 200, headers, "OK");
    handler.onResponseData?.(controller as never, chunk);
    handler.onResponseEnd?.(controller as never, {});
  });
  return true;
}) as Dispatch;

type Throttle = typeof throttle;
const neverBinds = () => new WindowLimiter({ limit: 1e9, interval: 1000, countFrom: "completion" });
const contenders: Record<string, Dispatch> = {
  "raw stub": stub,
  "throttle (defaults)": throttle({ limiter: neverBinds() })(stub),
};
if (baseline !== undefined) {
  const other = (await import(`${baseline}/src/integrations/undici/index.ts`)) as { throttle: Throttle };
  const { WindowLimiter: OtherWindow } = (await import(`${baseline}/src/index.ts`)) as { WindowLimiter: typeof WindowLimiter };
  contenders["baseline (defaults)"] = other.throttle({ limiter: new OtherWindow({ limit: 1e9, interval: 1000, countFrom: "completion" }) })(stub);
}

function request(dispatch: Dispatch): Promise<void> {
  return new Promise((resolve, reject) => {
    dispatch({ origin: "http://127.0.0.1:1", path: "/items", method: "GET", headers: {} } as DispatchRequest, {
      onRequestStart() {},
      onResponseStart() {},
      onResponseData() {},
      onResponseEnd: () => resolve(),
      onResponseError: (_c: unknown, error: unknown) => reject(error),
    } as DispatchHandler);
  });
}

async function sequential(dispatch: Dispatch): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) await request(dispatch);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / CALLS;
}

async function concurrent(dispatch: Dispatch): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < CALLS / CONCURRENT; i++) {
    const batch: Promise<void>[] = [];
    for (let j = 0; j < CONCURRENT; j++) batch.push(request(dispatch));
    await Promise.all(batch);
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / CALLS;
}

const samples: Record<string, number[]> = {};
const names = Object.keys(contenders);
for (let round = 0; round < rounds + 2; round++) {
  for (let k = 0; k < names.length; k++) {
    const name = names[(round + k) % names.length]!;
    const dispatch = contenders[name]!;
    gc();
    const seq = await sequential(dispatch);
    gc();
    const conc = await concurrent(dispatch);
    if (round < 2) continue; // warm-up
    (samples[`${name} sequential`] ??= []).push(seq);
    (samples[`${name} concurrent`] ??= []).push(conc);
  }
}
const median = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!;
for (const mode of ["sequential", "concurrent"]) {
  const raw = median(samples[`raw stub ${mode}`]!);
  for (const name of names) {
    const m = median(samples[`${name} ${mode}`]!);
    const spread = `${Math.min(...samples[`${name} ${mode}`]!).toFixed(2)}–${Math.max(...samples[`${name} ${mode}`]!).toFixed(2)}`;
    console.log(`${mode.padEnd(10)} ${name.padEnd(22)} ${m.toFixed(2)} µs CPU per request (${spread})${name === "raw stub" ? "" : `, ${(m - raw).toFixed(2)} µs over the stub`}`);
  }
}
