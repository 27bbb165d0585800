/**
 * The behavioural suite in a browser page, against the ESM build (`/dist/index.js`, served as is),
 * plus a real-time check that only a browser can make: a limiter in front of `fetch` to the local
 * server that serves the page. A page cannot listen, so `serve` is relayed by the host that serves
 * the page (`serve-browser.ts`), whose control origin comes in the page's query: `?relay=<origin>`.
 * Bundled and driven by `scripts/test-browser.ts`; results go to `window.__sluice`.
 */
import { WindowLimiter } from "../../../src/index.ts";
import { expect, show } from "../expect.ts";
import { cases, fullName, runCase } from "../index.ts";
import type { Platform } from "../harness.ts";
import { relayServe } from "../serve-browser.ts";

export interface BrowserOutcome {
  readonly name: string;
  readonly status: "passed" | "failed";
  readonly detail?: string;
}

const relay = new URLSearchParams(location.search).get("relay");
// Without a relay the cases that need a server fail, saying so; they are never skipped.
const platform: Platform = relay === null ? { name: "browser" } : { name: "browser", serve: relayServe(relay) };

/**
 * 9 requests through a 3-per-300-ms window, in real time (the default clock: `performance.now()`):
 * all answered, and none sent before its window allowed. Send times are measured after the grant,
 * so they can only be late; the check is therefore a strict lower bound that load cannot break:
 * the (3k+1)-th request goes no earlier than k·300 ms after the first request was made.
 */
async function throttledRequests(): Promise<void> {
  const limiter = new WindowLimiter({ limit: 3, interval: 300 });
  const start = performance.now();
  const sent: number[] = [];
  const bodies = await Promise.all(
    Array.from({ length: 9 }, (_, i) =>
      limiter.schedule(async () => {
        sent.push(performance.now() - start);
        const response = await fetch(`/hit/${i}`);
        expect(response.status).toBe(200);
        return (await response.json()) as { id: number };
      })
    ),
  );
  expect(bodies.map((b) => b.id)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  sent.sort((a, b) => a - b);
  const early = sent.filter((t, i) => t < Math.floor(i / 3) * 300);
  if (early.length > 0) {
    throw new Error(`sent at +${sent.map((t) => t.toFixed(1)).join(", +")} ms: ${early.length} went before their window`);
  }
}

async function runAll(): Promise<BrowserOutcome[]> {
  const outcomes: BrowserOutcome[] = [];
  const record = async (name: string, fn: () => Promise<void>) => {
    try {
      await fn();
      outcomes.push({ name, status: "passed" });
    } catch (error) {
      outcomes.push({ name, status: "failed", detail: error instanceof Error ? `${error.name}: ${error.message}` : show(error) });
    }
  };
  for (const c of cases()) await record(fullName(c), () => runCase(c, platform));
  await record("browser › a WindowLimiter paces real fetch() calls from the page to a local server", throttledRequests);
  return outcomes;
}

const target = globalThis as unknown as { __sluice?: { done: boolean; outcomes?: BrowserOutcome[]; error?: string } };
target.__sluice = { done: false };
runAll().then(
  (outcomes) => (target.__sluice = { done: true, outcomes }),
  (error: unknown) => (target.__sluice = { done: true, error: String(error) }),
);
