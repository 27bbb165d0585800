/**
 * The browser check: headless Chromium (Debian's `chromium`, driven by playwright-core) loads a page
 * from a local node:http server on 127.0.0.1; the page imports the ESM build from `/dist/` as shipped,
 * runs the behavioural suite, then makes limiter-paced `fetch` calls back to the server. The same
 * server relays the suite's local servers to the page (`lib/relay.ts`), so every case runs here.
 *
 *   node scripts/test-browser.ts        (needs /usr/bin/chromium: `bash scripts/ensure-chromium.sh`)
 *
 * Chromium is started with networking beyond loopback switched off (no background requests, no QUIC,
 * no component updates) and a fresh profile, so it needs nothing from outside this machine.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { chromium } from "playwright-core";
import { cases, fullName } from "../test/behaviour/index.ts";
import type { BrowserOutcome } from "../test/behaviour/run/browser.ts";
import { bundleAdapter } from "./lib/bundle.ts";
import { assertFreshDist } from "./lib/dist.ts";
import { DIST, TMP } from "./lib/paths.ts";
import { Relay } from "./lib/relay.ts";
import { clearResult, writeResult } from "./lib/results.ts";

const STEP = "browser";
const CHROMIUM = process.env.SLUICE_CHROMIUM ?? "/usr/bin/chromium";
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
];
/** The page's whole run; a hang fails instead of blocking CI. */
const PAGE_TIMEOUT = 90_000;

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>sluice in a browser</title>
<link rel="icon" href="data:,">
<script type="module" src="/behaviour.js"></script>
`;

function send(res: ServerResponse, status: number, type: string, body: string | Uint8Array): void {
  res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
  res.end(body);
}

async function main(): Promise<void> {
  clearResult(STEP);
  const fail = (reason: string) => {
    console.error(reason);
    writeResult(STEP, { passed: 0, failed: 1, skipped: 0, failures: [reason] });
    process.exitCode = 1;
  };
  if (!existsSync(CHROMIUM)) return fail(`browser cannot start: ${CHROMIUM} is missing (run \`bash scripts/ensure-chromium.sh\`)`);
  try {
    assertFreshDist();
  } catch (error) {
    return fail(`browser cannot start: ${(error as Error).message}`);
  }

  const bundle = join(TMP, "behaviour", "browser.js");
  await bundleAdapter({
    adapter: "test/behaviour/run/browser.ts",
    outfile: bundle,
    platform: "browser",
    distSpecifier: (file) => `/dist/${file}`,
  });

  const hits: number[] = [];
  const relay = new Relay();
  const server = createServer((req, res) => {
    if (relay.forward(req, res)) return;
    const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname;
    if (path === "/") return send(res, 200, "text/html; charset=utf-8", PAGE);
    if (path === "/behaviour.js") return send(res, 200, "text/javascript", readFileSync(bundle));
    const dist = /^\/dist\/([\w.-]+\.js)$/.exec(path);
    if (dist !== null && existsSync(join(DIST, basename(dist[1]!)))) {
      return send(res, 200, "text/javascript", readFileSync(join(DIST, basename(dist[1]!))));
    }
    const hit = /^\/hit\/(\d+)$/.exec(path);
    if (hit !== null) {
      hits.push(Number(hit[1]));
      return send(res, 200, "application/json", JSON.stringify({ id: Number(hit[1]) }));
    }
    send(res, 404, "text/plain", "not found");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const control = await relay.listen(origin);
  const profile = mkdtempSync(join(tmpdir(), "sluice-chromium-"));

  let context: Awaited<ReturnType<typeof chromium.launchPersistentContext>> | undefined;
  const pageErrors: string[] = [];
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
      timeout: 60_000,
    });
    const version = context.browser()?.version() ?? "(version unknown)";
    console.log(`behavioural suite in Chromium ${version} (${CHROMIUM}), page ${origin}/`);
    const page = context.pages()[0] ?? (await context.newPage());
    page.on("pageerror", (error) => pageErrors.push(error.message));
    page.on("console", (message) => {
      if (message.type() !== "error") return;
      // Chromium logs every 4xx/5xx and refused load; for a case's server those are the case's business.
      if (message.text().startsWith("Failed to load resource:") && message.location().url.includes("/__relay/")) return;
      pageErrors.push(message.text());
    });
    await page.goto(`${origin}/?relay=${encodeURIComponent(control)}`);
    await page.waitForFunction(() => (globalThis as { __sluice?: { done: boolean } }).__sluice?.done === true, null, {
      timeout: PAGE_TIMEOUT,
    });
    const run = (await page.evaluate(() => (globalThis as { __sluice?: unknown }).__sluice)) as {
      outcomes?: BrowserOutcome[];
      error?: string;
    };
    if (run.error !== undefined || run.outcomes === undefined) return fail(`browser: the page failed: ${run.error}`);

    const failures: string[] = [];
    for (const o of run.outcomes) {
      const mark = o.status === "passed" ? "✓" : "✗";
      console.log(`  ${mark} ${o.name}${o.detail ? `\n      ${o.detail}` : ""}`);
      if (o.status === "failed") failures.push(`${o.name}: ${o.detail}`);
    }
    const reported = new Set(run.outcomes.map((o) => o.name));
    const missing = cases().map(fullName).filter((name) => !reported.has(name));
    if (missing.length > 0) failures.push(`browser: ${missing.length} registered cases were not reported: ${missing.join("; ")}`);
    if ([...hits].sort((a, b) => a - b).join() !== "0,1,2,3,4,5,6,7,8") {
      failures.push(`browser: the server saw requests ${JSON.stringify(hits)}, expected 0–8 once each`);
    }
    for (const e of pageErrors) failures.push(`browser: page error: ${e}`);
    // Every case closed its servers, and every relayed request was answered.
    for (const left of relay.leftovers()) failures.push(`browser: relay: ${left} when the page finished`);
    const passed = run.outcomes.filter((o) => o.status === "passed").length;
    const failed = failures.length;
    writeResult(STEP, { passed, failed, skipped: 0, failures });
    console.log(`${STEP}: ${passed} passed, ${failed} failed`);
    if (failed > 0) process.exitCode = 1;
  } catch (error) {
    return fail(`browser: ${(error as Error).message}`);
  } finally {
    await context?.close();
    await relay.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(profile, { recursive: true, force: true });
  }
}

await main();
