/**
 * Gate work in contended domains, as a count rather than a time (this box is shared, so wall times
 * swing by 2× between identical runs): policy calls per grant — `earliest`, `earliestAfter`,
 * `clone` of the strict windows — to drain an overall window plus many channels, each
 * `combine(overall, own window)`, with requests of 1–3 permits at once or spread over time.
 * Compare two trees to see what a change to the grant rule costs:
 *
 *   node bench/gate-work.ts            (this tree)
 *   node bench/gate-work.ts /path/to/other/checkout
 *
 * @module
 */

const dir = process.argv[2] ?? new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const m = await import(`${dir}/src/index.ts`);
const { WindowPolicy } = await import(`${dir}/src/limiters/window.ts`);

/** Calls counted on every strict window's policy (the prototype is wrapped once). */
const counts = { earliest: 0, earliestAfter: 0, clone: 0 };
const proto = WindowPolicy.prototype as unknown as Record<keyof typeof counts, (...args: unknown[]) => unknown>;
for (const name of Object.keys(counts) as (keyof typeof counts)[]) {
  const original = proto[name];
  proto[name] = function (this: unknown, ...args: unknown[]) {
    counts[name]++;
    return original.apply(this, args);
  };
}

/** [channels, requests, per-channel limit per second, arrivals every 0–spread ms (0: all at once)] */
const CASES = [[100, 2000, 3, 0], [1000, 5000, 1, 0], [10, 2000, 10, 0], [100, 5000, 3, 10], [10, 5000, 10, 7]] as const;

for (const [channels, n, perChannel, spread] of CASES) {
  counts.earliest = counts.earliestAfter = counts.clone = 0;
  const clock = new m.ManualClock();
  const overall = new m.WindowLimiter({ limit: 50, interval: 1000, clock });
  const combos = Array.from({ length: channels }, () => m.combine(overall, new m.WindowLimiter({ limit: perChannel, interval: 1000, clock })));
  let x = 12345; // a fixed LCG: both trees see the same requests
  const next = () => (x = (x * 1103515245 + 12345) & 0x7fffffff);
  const all: Promise<unknown>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    if (spread > 0) await clock.advance(next() % spread);
    all.push(combos[next() % channels]!.acquire(1 + (next() % Math.min(3, perChannel))));
  }
  await clock.runAll(1e7);
  await Promise.all(all);
  const per = (k: number) => (k / n).toFixed(2);
  console.log(
    `${channels} channels, ${n} requests, ${spread > 0 ? `arrivals every 0–${spread} ms` : "all at once"}: drained at ${clock.now()} ms; ` +
      `per grant: earliest ${per(counts.earliest)}, earliestAfter ${per(counts.earliestAfter)}, clone ${per(counts.clone)} ` +
      `(wall ${(performance.now() - t0).toFixed(0)} ms, loaded machine: indicative only)`,
  );
}
