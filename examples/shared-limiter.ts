/**
 * How do many concurrent callers share one throttle? Give them the SAME limiter instance.
 *
 * Twenty independent async workers each fetch their share of 60 "jobs"; one SmoothLimiter at
 * 20 per second (burst 5) paces all of them together, first come first served. Run it:
 *
 *   node examples/shared-limiter.ts
 *
 * (In your project, import from "sluice" instead of "../src/index.ts".)
 */
import { SmoothLimiter } from "../src/index.ts";

const limiter = new SmoothLimiter({ limit: 20, interval: 1000, burst: 5 });
const started = performance.now();
const elapsed = () => `${Math.round(performance.now() - started)}`.padStart(5) + " ms";

/** Stands in for an API call. */
async function callApi(worker: number, job: number): Promise<string> {
  await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
  return `worker ${worker} job ${job}`;
}

async function worker(id: number, jobs: number[]): Promise<number> {
  for (const job of jobs) {
    // Every call waits its turn on the shared limiter; the limiter, not the worker, sets the pace.
    const result = await limiter.schedule(() => callApi(id, job));
    if (job % 10 === 0) console.log(`${elapsed()}  ${result}`);
  }
  return jobs.length;
}

const jobs = Array.from({ length: 60 }, (_, i) => i);
const done = await Promise.all(
  Array.from({ length: 20 }, (_, w) => worker(w, jobs.filter((j) => j % 20 === w))),
);
const seconds = (performance.now() - started) / 1000;
console.log(`\n${done.reduce((a, b) => a + b)} calls from 20 workers in ${seconds.toFixed(2)} s`);
console.log(`= ${(60 / seconds).toFixed(1)} per second overall (limit 20/s, first 5 as a burst)`);
