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
import { AdaptiveLimiter, type RateChange, sendAdaptive } from "../src/index.ts";
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

  const api = await startLocalApi({ limit: rate, window: 1000, jitter: 10 });
  const changes: RateChange[] = [];
  const limiter = new AdaptiveLimiter({
    ...(told > 0 && { maxRate: told }),
    onChange: (change) => changes.push(change),
  });
  console.log(`A local API allows ${rate} requests in any rolling second (429 + Retry-After beyond).`);
  console.log(`The client is told ${told > 0 ? `${told} per second` : "nothing"}; ${concurrency} callers for ${seconds} s.\n`);
  const started = performance.now();
  const endAt = started + seconds * 1000;
  let shown = 0;
  let lastLog = 0;
  let lastRefused = 0;
  const tick = () => {
    const second = Math.round((performance.now() - started) / 1000);
    const accepted = api.log.slice(lastLog).filter((a) => a.ok).length;
    const refused = api.refused - lastRefused;
    lastLog = api.log.length;
    lastRefused = api.refused;
    const news = changes.slice(shown).map((c) => `${c.reason} → ${c.rate.toFixed(1)}/s`);
    shown = changes.length;
    console.log(`  ${String(second).padStart(3)} s  accepted ${String(accepted).padStart(3)}  429s ${String(refused).padStart(3)}  ` +
      `rate ${limiter.rate.toFixed(1).padStart(5)}/s${news.length > 0 ? `  (${news.join(", ")})` : ""}`);
  };
  const timer = setInterval(tick, 1000);
  const caller = async () => {
    while (performance.now() < endAt) {
      // Retries re-enter the limiter: a refused request is this caller's next turn.
      const response = await sendAdaptive(limiter, () => fetch(`${api.url}/items`));
      await response.body?.cancel();
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, caller));
  } finally {
    clearInterval(timer);
    await api.close();
  }
  const half = (seconds * 1000) / 2;
  const late = api.log.filter((a) => a.at - started >= half);
  const lastFive = api.log.filter((a) => a.ok && a.at - started >= seconds * 1000 - 5000).length / 5;
  console.log(`\n  429s received            ${api.refused} of ${api.log.length} (${late.filter((a) => !a.ok).length} in the second half)`);
  console.log(`  learned rate             ${limiter.rate.toFixed(1)}/s (the server allows ${rate}/s; told ${told > 0 ? `${told}/s` : "nothing"})`);
  console.log(`  accepted, last 5 s       ${lastFive.toFixed(1)}/s`);
  console.log(`  rate changes             ${changes.length} (${[...new Set(changes.map((c) => c.reason))].join(", ") || "none"})`);
  return 0;
}
