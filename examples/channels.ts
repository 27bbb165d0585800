/**
 * An overall limit plus per-channel limits, taken atomically with `combine`.
 *
 * The API allows 10 requests per second in total, and its /search endpoint only 2 per second.
 * Searches wait for the search limit without holding up other endpoints. Run it:
 *
 *   node examples/channels.ts
 */
import { combine, WindowLimiter } from "../src/index.ts";

const overall = new WindowLimiter({ limit: 10, interval: 1000 });
const endpoints = {
  search: combine(overall, new WindowLimiter({ limit: 2, interval: 1000 })),
  items: overall, // no extra limit of its own
};

const started = performance.now();
const at = () => `${Math.round((performance.now() - started) / 100) * 100}`.padStart(5) + " ms";
const log: string[] = [];

await Promise.all([
  ...Array.from({ length: 6 }, (_, i) => endpoints.search.schedule(() => log.push(`${at()}  search #${i + 1}`))),
  ...Array.from({ length: 12 }, (_, i) => endpoints.items.schedule(() => log.push(`${at()}  items  #${i + 1}`))),
]);
console.log(log.join("\n"));
console.log("\nsearch: 2 per second; items fill the rest of the 10 per second, never waiting behind a search.");
