/**
 * The limiters side by side, in real time: 8 concurrent workers push 30 tasks through each of four
 * algorithms configured for "10 per second", and the demo draws how many started in each 100 ms.
 * The algorithms run one after another, so that one's work never delays another's timestamps.
 *
 *   node examples/limiters-demo.ts
 */
import {
  FixedWindowLimiter,
  type Limiter,
  SlidingCounterLimiter,
  SmoothLimiter,
  WindowLimiter,
} from "../src/index.ts";

const TASKS = 30;
const WORKERS = 8;
const algorithms: Array<[string, () => Limiter]> = [
  ["SmoothLimiter burst 5", () => new SmoothLimiter({ limit: 10, interval: 1000, burst: 5 })],
  ["WindowLimiter (strict)", () => new WindowLimiter({ limit: 10, interval: 1000 })],
  ["FixedWindowLimiter", () => new FixedWindowLimiter({ limit: 10, interval: 1000 })],
  ["SlidingCounterLimiter", () => new SlidingCounterLimiter({ limit: 10, interval: 1000 })],
];

async function run(limiter: Limiter): Promise<number[]> {
  const started = performance.now();
  const starts: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < TASKS) {
      next++;
      await limiter.schedule(() => starts.push(performance.now() - started));
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, worker));
  return starts;
}

/** Starts per 100 ms bucket as a strip of digits ("." for none). */
function strip(starts: number[], buckets: number): string {
  const counts = new Array<number>(buckets).fill(0);
  for (const t of starts) counts[Math.min(buckets - 1, Math.floor(t / 100))]!++;
  return counts.map((c) => (c === 0 ? "." : c > 9 ? "+" : String(c))).join("");
}

/** Most starts in any 1000 ms window, from every start time. */
function worstWindow(starts: number[]): number {
  return Math.max(...starts.map((s) => starts.filter((t) => t >= s && t < s + 1000).length));
}

console.log(`${TASKS} tasks, ${WORKERS} workers, limit 10 per second. Starts per 100 ms:\n`);
const results: Array<readonly [string, number[]]> = [];
for (const [name, make] of algorithms) results.push([name, await run(make())]);
const buckets = Math.ceil(Math.max(...results.flatMap(([, s]) => s)) / 100) + 1;
for (const [name, starts] of results) {
  const total = (Math.max(...starts) / 1000).toFixed(2);
  console.log(`${name.padEnd(24)} ${strip(starts, buckets)}  ${total} s, worst 1 s window: ${worstWindow(starts)}`);
}
console.log("\nSmooth spaces evenly after its burst; the strict window never exceeds 10 in any second;");
console.log("the fixed window can double up across an edge; the sliding counter approximates the strict window.");
