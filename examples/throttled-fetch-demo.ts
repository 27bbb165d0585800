/**
 * The throttled fetch against an embedded local API that enforces "10 requests per 500 ms" strictly
 * on arrival (a stand-in for a real rate-limited API). Four short scenes, about 10 s in all:
 *
 *   1. At the documented limit: a window counted from the grant (what a plain limiter does) versus
 *      sluice's safe default, counted from each response's arrival — 429s and the rate each gets.
 *   2. One 429 slows everyone: the server refuses one request; every caller waits, then all finish.
 *   3. A failing server is not hammered: a 503 storm, and the retry budget.
 *   4. A long Retry-After is not clamped: the caller gets the 429 at once, and sees the delay.
 *
 *   npm start        (or: node examples/throttled-fetch-demo.ts)
 *
 * (In your project, import from "sluice" instead of "../src/index.ts".)
 */
import { createThrottledFetch, SmoothLimiter, type ThrottleEvent, WindowLimiter } from "../src/index.ts";
import { startLocalApi } from "./support/local-api.ts";

const LIMIT = 10;
const WINDOW = 500;
const CALLS = 40;

function line(text = ""): void {
  console.log(text);
}

async function scene1(): Promise<void> {
  line(`1. At the documented limit (${LIMIT} per ${WINDOW} ms, strict, 0–10 ms latency), ${CALLS} concurrent callers`);
  for (const countFrom of ["grant", "completion"] as const) {
    const api = await startLocalApi({ limit: LIMIT, window: WINDOW });
    try {
      const limiter = new WindowLimiter({ limit: LIMIT, interval: WINDOW, countFrom });
      // No retries here: we want to see what the server thinks of the pace itself.
      const fetchApi = createThrottledFetch({ limiter, retry: 0 });
      const started = performance.now();
      const responses = await Promise.all(Array.from({ length: CALLS }, (_, i) => fetchApi(`${api.url}/r/${i}`)));
      const elapsed = performance.now() - started;
      await Promise.all(responses.map((r) => r.body?.cancel()));
      const refused = responses.filter((r) => r.status === 429).length;
      // Slots are reused (CALLS / LIMIT − 1) times; each reuse ideally takes exactly one window.
      const ideal = (CALLS / LIMIT - 1) * WINDOW;
      if (countFrom === "grant") {
        line(`   counted from the grant:    ${String(refused).padStart(2)} × 429 (${((100 * refused) / CALLS).toFixed(0)} %), ` +
          `each pausing every caller (Retry-After: 1 s); done in ${elapsed.toFixed(0)} ms`);
      } else {
        line(`   counted from the response: ${String(refused).padStart(2)} × 429; done in ${elapsed.toFixed(0)} ms ` +
          `vs ${ideal} ms + one latency ideal: the safety costs ${(100 * (elapsed / ideal - 1)).toFixed(1)} % of the rate`);
      }
    } finally {
      await api.close();
    }
  }
  line("   Counting from the response costs one latency per slot reuse and is safe whatever the latency;");
  line("   counting from the grant is exact on the client but loses to jitter on the wire.");
  line();
}

async function scene2(): Promise<void> {
  line("2. One 429 slows everyone (30 callers paced at 20 per second; the 6th request is refused)");
  const api = await startLocalApi({ limit: 100, window: 1000 });
  try {
    const fetchApi = createThrottledFetch({
      limiter: new SmoothLimiter({ limit: 20, interval: 1000 }),
      onThrottle: (e: ThrottleEvent) => line(`   a ${e.response.status} arrived: every caller pauses ${e.paused} ms, keeping its place`),
    });
    api.refuseNext(1, 800, 5);
    const started = performance.now();
    const answers: number[] = [];
    const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => fetchApi(`${api.url}/a/${i}`).then((r) => {
      answers.push(performance.now() - started); // when each caller got its answer
      return r;
    })));
    await Promise.all(responses.map((r) => r.body?.cancel()));
    const strip = Array.from({ length: 24 }, (_, i) => {
      const n = answers.filter((t) => t >= i * 100 && t < (i + 1) * 100).length;
      return n === 0 ? "." : n > 9 ? "+" : String(n);
    }).join("");
    line(`   responses per 100 ms: ${strip}`);
    line(`   ${api.accepted + api.refused} requests, ${api.refused} refused (retried after the pause); all 30 callers finished, no burst after the pause`);
  } finally {
    await api.close();
  }
  line();
}

async function scene3(): Promise<void> {
  line("3. A failing server is not hammered (every request answers 503)");
  const { createServer } = await import("node:http");
  let requests = 0;
  const server = createServer((req, res) => {
    requests++;
    req.resume();
    res.writeHead(503).end("overloaded");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  try {
    const fetchApi = createThrottledFetch({
      limit: 1000,
      retry: { limit: 2, backoff: { base: 10, cap: 50 } }, // the default budget: 20 % of calls + 10
    });
    const responses = await Promise.all(Array.from({ length: 100 }, () => fetchApi(`http://127.0.0.1:${port}/`)));
    await Promise.all(responses.map((r) => r.body?.cancel()));
    line(`   100 calls, 2 retries each allowed: the server saw ${requests} requests, not 300 ` +
      `(retry budget: ≤ 10 + 20 % of calls)`);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  line();
}

async function scene4(): Promise<void> {
  line("4. A long Retry-After is not clamped");
  const { createServer } = await import("node:http");
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(429, { "retry-after": "3600" }).end("come back in an hour");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  try {
    let seen = 0;
    const fetchApi = createThrottledFetch({ limit: 10, onThrottle: (e) => (seen = e.delay) });
    const started = performance.now();
    const response = await fetchApi(`http://127.0.0.1:${port}/`);
    await response.body?.cancel();
    line(`   status ${response.status} after ${(performance.now() - started).toFixed(0)} ms; the server asked for ${seen / 1000} s ` +
      `(> maxRetryAfter 60 s): no retry, no pause — the caller decides`);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

const started = performance.now();
await scene1();
await scene2();
await scene3();
await scene4();
line(`\ndone in ${((performance.now() - started) / 1000).toFixed(1)} s`);
