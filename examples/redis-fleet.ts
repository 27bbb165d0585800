/**
 * A worker fleet sharing one API key, through Redis.
 *
 * The API allows 20 requests per rolling second per key (and 429s beyond). Four worker PROCESSES
 * call it at once; each builds the same limiter on the same Redis keys, so together they never
 * exceed the key's budget, queue first come first served, and a 429 seen by one pauses all.
 *
 * Run: node_modules/.bin/node examples/redis-fleet.ts
 * Uses REDIS_URL if set; otherwise starts a private redis-server (127.0.0.1, free port, no
 * persistence) and stops it at the end.
 */
import { type ChildProcess, execFileSync, fork, spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "ioredis";
import { fromIoredis, RedisStore, RedisWindowLimiter } from "../src/redis.ts";

const WORKERS = 4;
const REQUESTS_PER_WORKER = 15;
const API_LIMIT = 20; // per rolling second, per API key: the documented limit

// ---------------------------------------------------------------------------------------------
// The recipe: what each worker process runs.
// ---------------------------------------------------------------------------------------------
async function worker(redisUrl: string, apiUrl: string, id: number): Promise<void> {
  // Fail fast while disconnected: the limiter has its own timeout and failure policy.
  const redis = new Redis(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  // Without an offline queue, calls before the connection is up fail (and go to the failure policy).
  if (redis.status !== "ready") await new Promise((resolve) => redis.once("ready", resolve));
  const store = new RedisStore({
    client: fromIoredis(redis),
    name: "acme-api", // one family per upstream API: one hash tag, one Cluster slot
    failure: { local: 1 / WORKERS }, // Redis down: each worker keeps its share of the budget
    timeout: 500,
  });
  // The documented limit, with a 5% longer window: the API counts arrivals, which trail our grants
  // by the request latency and by event-loop delays on a busy machine.
  const limiter = new RedisWindowLimiter({ store, key: "key-1", limit: API_LIMIT, interval: 1050 });
  // The API counts arrivals, we count grants: keep the two close. A cold process's first request
  // loads the HTTP stack and opens a connection (easily 100+ ms), so do that before taking permits
  // (HEAD is free on this API), then start together with the rest of the fleet.
  await fetch(apiUrl, { method: "HEAD" });
  process.send!({ ready: id });
  await new Promise((resolve) => process.once("message", resolve));

  const statuses: number[] = [];
  await Promise.all(
    Array.from({ length: REQUESTS_PER_WORKER }, () =>
      limiter.schedule(async () => {
        const response = await fetch(apiUrl, { headers: { authorization: "key-1" } });
        if (response.status === 429) limiter.pause(Number(response.headers.get("retry-after") ?? 1) * 1000);
        statuses.push(response.status);
        await response.body?.cancel();
      })),
  );
  redis.disconnect();
  process.send!({ id, statuses });
}

// ---------------------------------------------------------------------------------------------
// The demo harness: a Redis, a strict API that counts arrivals, and the fleet.
// ---------------------------------------------------------------------------------------------
function strictApi(): Promise<{ server: Server; url: string; arrivals: number[] }> {
  const arrivals: number[] = [];
  const server = createServer((request, response) => {
    if (request.method === "HEAD") return void response.end(); // free: not counted
    const now = performance.now();
    const inWindow = arrivals.filter((t) => t > now - 1000).length;
    if (inWindow >= API_LIMIT) {
      response.writeHead(429, { "retry-after": "1" }).end();
      return;
    }
    arrivals.push(now);
    response.end("ok");
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({ server, url: `http://127.0.0.1:${port}/`, arrivals });
    })
  );
}

async function privateRedis(): Promise<{ url: string; stop: () => void }> {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, stop: () => {} };
  try {
    execFileSync("redis-server", ["--version"]);
  } catch {
    throw new Error("redis-server not found: set REDIS_URL, or install it (bash scripts/ensure-redis.sh)");
  }
  const probe = createServer();
  const port = await new Promise<number>((resolve) =>
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    })
  );
  const child: ChildProcess = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  await new Promise<void>((resolve) => {
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("Ready to accept connections")) resolve();
    });
  });
  child.stdout!.resume();
  return { url: `redis://127.0.0.1:${port}`, stop: () => child.kill("SIGKILL") };
}

async function main(): Promise<void> {
  const redis = await privateRedis();
  const api = await strictApi();
  try {
    const children = Array.from({ length: WORKERS }, (_, id) => fork(import.meta.filename, ["worker", redis.url, api.url, String(id)]));
    const results = children.map((child, id) =>
      new Promise<{ id: number; statuses: number[] }>((resolve, reject) => {
        child.on("message", (message: { statuses?: number[] }) => {
          if (message.statuses !== undefined) resolve(message as { id: number; statuses: number[] });
        });
        child.once("exit", (code) => (code === 0 ? undefined : reject(new Error(`worker ${id} exited with ${code}`))));
      })
    );
    await Promise.all(children.map((child) => new Promise((resolve) => child.once("message", resolve)))); // all warm
    const started = performance.now();
    for (const child of children) child.send("go");
    const done = await Promise.all(results);
    const seconds = (performance.now() - started) / 1000;
    const all = done.flatMap((r) => r.statuses);
    let worst = 0;
    for (const t of api.arrivals) worst = Math.max(worst, api.arrivals.filter((u) => u >= t && u < t + 1000).length);
    console.log(`${WORKERS} worker processes, ${all.length} requests in ${seconds.toFixed(1)} s`);
    console.log(`200 OK: ${all.filter((s) => s === 200).length}, 429: ${all.filter((s) => s === 429).length}`);
    console.log(`most requests the API saw in any second: ${worst} (its limit: ${API_LIMIT})`);
  } finally {
    api.server.close();
    redis.stop();
  }
}

if (process.argv[2] === "worker") {
  await worker(process.argv[3]!, process.argv[4]!, Number(process.argv[5]));
} else {
  await main();
}
