/**
 * The adaptive scene of the demo (`npm start -- --adaptive`): a client told the WRONG limit settles
 * on the server's real one. A local API allows `rate` requests in any rolling second (429 +
 * Retry-After beyond); one adaptive throttled client, told `told` per second (2× too much by default,
 * `--told 0` for nothing at all), serves `concurrency` callers for `seconds`. Each second it prints
 * what the server accepted and refused, and every change of the learned rate with its reason.
 *
 *   npm start -- --adaptive                         (defaults: --rate 20 --told 40 --seconds 20 --concurrency 20)
 *   npm start -- --adaptive --told 0                told nothing: slow start finds the rate
 *
 * @module
 */
import { parseArgs } from "node:util";
import { AdaptiveRates, createThrottledFetch, type KeyedRateChange } from "../src/index.ts";
import { startLocalApi } from "./support/local-api.ts";

/** Runs the scene with command-line `argv` (without `--adaptive`); resolves with the exit code. */
export async function adaptiveScene(argv: readonly string[]): Promise<number> {
  const { values: args } = parseArgs({
    args: [...argv],
    options: {
      rate: { type: "string", default: "20" },
      told: { type: "string" },
      seconds: { type: "string", default: "20" },
      concurrency: { type: "string", default: "20" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (args.help) {
    console.log(`sluice demo, adaptive scene: a client told the wrong limit settles on the server's.

  --rate N          the API's real limit, requests per rolling second     (default 20)
  --told N          the limit the client is told (0: nothing)             (default 2 × rate)
  --seconds N       how long the callers run                              (default 20)
  --concurrency N   concurrent callers                                    (default 20)`);
    return 0;
  }
  const number = (name: string, value: string | undefined, min: number): number | undefined => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) {
      console.error(`--${name} must be an integer of at least ${min}, got ${JSON.stringify(value)}`);
      return undefined;
    }
    return n;
  };
  const rate = number("rate", args.rate, 1);
  const told = number("told", args.told ?? String(2 * (rate ?? 0)), 0);
  const seconds = number("seconds", args.seconds, 1);
  const concurrency = number("concurrency", args.concurrency, 1);
  if (rate === undefined || told === undefined || seconds === undefined || concurrency === undefined) return 2;

  const server = await startLocalApi({ limit: rate, window: 1000, jitter: 10 });
  const changes: KeyedRateChange[] = [];
  // One learned rate per origin; passed in so the demo can read it.
  const rates = new AdaptiveRates({ onChange: (change) => changes.push(change) });
  const api = createThrottledFetch({ adaptive: rates, ...(told > 0 && { limit: told, interval: 1000 }) });
  const origin = new URL(server.url).origin;
  const learned = () => rates.rate(origin) ?? 0;
  console.log(`A local API allows ${rate} requests in any rolling second (429 + Retry-After beyond).`);
  console.log(`The client is told ${told > 0 ? `${told} per second` : "nothing"}; ${concurrency} callers for ${seconds} s.\n`);
  const started = performance.now();
  const endAt = started + seconds * 1000;
  let shown = 0;
  let lastLog = 0;
  let lastRefused = 0;
  const tick = () => {
    const second = Math.round((performance.now() - started) / 1000);
    const accepted = server.log.slice(lastLog).filter((a) => a.ok).length;
    const refused = server.refused - lastRefused;
    lastLog = server.log.length;
    lastRefused = server.refused;
    const news = changes.slice(shown).map((c) => `${c.reason} → ${c.rate.toFixed(1)}/s`);
    shown = changes.length;
    console.log(`  ${String(second).padStart(3)} s  accepted ${String(accepted).padStart(3)}  429s ${String(refused).padStart(3)}  ` +
      `rate ${learned().toFixed(1).padStart(5)}/s${news.length > 0 ? `  (${news.join(", ")})` : ""}`);
  };
  const timer = setInterval(tick, 1000);
  const caller = async () => {
    while (performance.now() < endAt) {
      // A refused request is retried by the fetch, through the learned rate again.
      const response = await api(`${server.url}/items`);
      await response.body?.cancel();
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, caller));
  } finally {
    clearInterval(timer);
    await server.close();
  }
  const half = (seconds * 1000) / 2;
  const late = server.log.filter((a) => a.at - started >= half);
  const lastFive = server.log.filter((a) => a.ok && a.at - started >= seconds * 1000 - 5000).length / 5;
  console.log(`\n  429s received            ${server.refused} of ${server.log.length} (${late.filter((a) => !a.ok).length} in the second half)`);
  console.log(`  learned rate             ${learned().toFixed(1)}/s (the server allows ${rate}/s; told ${told > 0 ? `${told}/s` : "nothing"})`);
  console.log(`  accepted, last 5 s       ${lastFive.toFixed(1)}/s`);
  console.log(`  rate changes             ${changes.length} (${[...new Set(changes.map((c) => c.reason))].join(", ") || "none"})`);
  return 0;
}
