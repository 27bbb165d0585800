/**
 * sluice's own CPU per throttled-fetch call: a fetch that answers at once (a stub returning a prebuilt
 * `Response`), so every microsecond measured is sluice's (plus the promise hops it adds), not the
 * network's. Compares, in interleaved rounds, the stub called directly with the same stub behind
 * `createThrottledFetch` with default options (limit 1e9 per second, so the limiter never binds),
 * sequentially and 100 calls at a time. Figures are process CPU time (user + system) per call, so
 * other processes on a loaded machine inflate them less than wall time; report medians and spread.
 *
 *   node --expose-gc bench/fetch-cpu.ts [rounds, default 9] [--baseline=/path/to/other/checkout/src/index.ts]
 *
 * `--baseline` adds that checkout's `createThrottledFetch` as a third contender in the same rounds
 * (e.g. `main` against a branch), which on a loaded machine says more than two separate runs.
 *
 * @module
 */
import { createThrottledFetch } from "../src/index.ts";

const args = process.argv.slice(2);
const rounds = Number(args.find((a) => !a.startsWith("--")) ?? 9);
const baseline = args.find((a) => a.startsWith("--baseline="))?.slice("--baseline=".length);
const CALLS = 20_000;
const CONCURRENT = 100;
const response = new Response(null, { status: 200 });
const stub = (_input: string | URL | Request, _init?: RequestInit): Promise<Response> => Promise.resolve(response);
const url = "http://127.0.0.1:1/items";
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

type Fetch = (input: string, init?: RequestInit) => Promise<Response>;
const contenders: Record<string, () => Fetch> = {
  "raw stub": () => stub,
  "sluice (defaults)": () => createThrottledFetch({ limit: 1e9, interval: 1000, fetch: stub }),
};

async function sequential(f: Fetch): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) await f(url);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / CALLS;
}

async function concurrent(f: Fetch): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < CALLS / CONCURRENT; i++) {
    const batch: Promise<Response>[] = [];
    for (let j = 0; j < CONCURRENT; j++) batch.push(f(url));
    await Promise.all(batch);
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / CALLS;
}

if (baseline !== undefined) {
  const other = (await import(baseline)) as { createThrottledFetch: typeof createThrottledFetch };
  contenders["baseline (defaults)"] = () => other.createThrottledFetch({ limit: 1e9, interval: 1000, fetch: stub });
}

const samples: Record<string, number[]> = {};
const names = Object.keys(contenders);
for (let round = 0; round < rounds + 2; round++) {
  for (let k = 0; k < names.length; k++) {
    const name = names[(k + round) % names.length]!;
    for (const [mode, run] of [["sequential", sequential], ["100 concurrent", concurrent]] as const) {
      const f = contenders[name]!();
      gc();
      const us = await run(f);
      if (round >= 2) (samples[`${name}, ${mode}`] ??= []).push(us);
    }
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const stat = (key: string) => {
  const xs = samples[key]!;
  const sorted = [...xs].sort((a, b) => a - b);
  return { median: median(xs), min: sorted[0]!, max: sorted[sorted.length - 1]! };
};
console.log(`CPU µs per call (user+system), ${rounds} rounds × ${CALLS} calls, Node ${process.version}, load ${(await import("node:os")).loadavg()[0]!.toFixed(1)}`);
for (const mode of ["sequential", "100 concurrent"]) {
  const raw = stat(`raw stub, ${mode}`);
  const line = [`${mode.padEnd(15)} raw ${raw.median.toFixed(2)} µs [${raw.min.toFixed(2)}–${raw.max.toFixed(2)}]`];
  for (const name of names.slice(1)) {
    const s = stat(`${name}, ${mode}`);
    line.push(`${name.split(" ")[0]} ${s.median.toFixed(2)} µs [${s.min.toFixed(2)}–${s.max.toFixed(2)}], own ≈ ${(s.median - raw.median).toFixed(2)} µs`);
  }
  console.log(line.join("; "));
}
