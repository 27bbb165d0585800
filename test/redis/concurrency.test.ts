/**
 * Several processes × many connections hammer one combination (strict window + smooth) with real
 * server time. From every reply: the strict window is never exceeded, the smooth bound holds, and
 * refused reservations wrote nothing.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { LOAD } from "./load.ts";
import { describeRedis, type RedisServer, recordOf, startRedis, useRedis } from "./server.ts";

const NODE = process.execPath;
const WORKER = fileURLToPath(new URL("./worker.ts", import.meta.url));
const PROCESSES = 4;
const CONNECTIONS = 4;

function runWorker(port: number, name: string, seed: number, requests: number, thinkMs: number): Promise<{ granted: [string, number, number][]; refused: string[] }> {
  return new Promise((resolve, reject) => {
    execFile(NODE, [WORKER, String(port), name, String(CONNECTIONS), String(requests), String(seed), String(thinkMs)], { maxBuffer: 64 << 20 },
      (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout))));
  });
}

describeRedis("concurrency: processes × connections on one combination", () => {
  let server: RedisServer;
  let redis: Redis;

  useRedis((s, r) => {
    server = s;
    redis = r;
  });

  async function hammer(name: string, requests: number, thinkMs: number): Promise<void> {
    const results = await Promise.all(
      Array.from({ length: PROCESSES }, (_, i) => runWorker(server.port, name, i + 1, requests, thinkMs)),
    );
    const [sec, usec] = await redis.time();
    const end = Number(sec) * 1e6 + Number(usec);
    const granted = results.flatMap((r) => r.granted).sort((a, b) => a[1] - b[1]);
    const refused = results.flatMap((r) => r.refused);
    expect(granted.length + refused.length).toBe(PROCESSES * requests);
    expect(granted.length).toBeGreaterThan(50);
    expect(refused.length).toBeGreaterThan(granted.length / 20);

    // Strict window: the permits granted in [t, t + W) for t at every grant time.
    const W = LOAD.windowMs * 1000;
    let worst = 0;
    for (let i = 0, j = 0, sum = 0; i < granted.length; i++) {
      while (j < granted.length && granted[j]![1] < granted[i]![1] + W) sum += granted[j++]![2];
      worst = Math.max(worst, sum);
      sum -= granted[i]![2];
    }
    expect(worst).toBeLessThanOrEqual(LOAD.windowLimit);
    expect(worst).toBe(LOAD.windowLimit); // and the limit was actually reached: the test has teeth

    // Smooth: permits granted in [s, e] ≤ (e − s)/T + burst + the largest request (each grant owns a
    // slot of n·T starting within burst·T before it; slots never overlap).
    const T = 1e6 / LOAD.smoothLimit;
    let slack = Infinity;
    for (let i = 0; i < granted.length; i++) {
      let sum = 0;
      for (let j = i; j < granted.length; j++) {
        sum += granted[j]![2];
        const bound = (granted[j]![1] - granted[i]![1]) / T + LOAD.smoothBurst + LOAD.maxPermits;
        slack = Math.min(slack, bound - sum);
      }
    }
    expect(slack).toBeGreaterThanOrEqual(-1e-9);
    expect(slack).toBeLessThan(LOAD.maxPermits + 1); // the smooth limit bound too, somewhere

    // Refusals wrote nothing: every stored entry is a granted reservation, every future grant is stored.
    const okIds = new Set(granted.map((g) => g[0]));
    const windowIds = (await redis.zrange(`{sluice:${name}}:w:window`, "0", "-1")).map((m) => m.split("|")[2]!);
    expect(windowIds.every((id) => okIds.has(id))).toBe(true);
    const future = granted.filter((g) => g[1] > end).map((g) => g[0]);
    expect(new Set(windowIds)).toEqual(new Set([...new Set(windowIds)].filter((id) => okIds.has(id))));
    for (const id of future) expect(windowIds).toContain(id);
    const queue = await redis.zrange(`{sluice:${name}}:s:smooth:q`, "0", "-1");
    expect(queue.every((id) => okIds.has(id))).toBe(true);
    const records = await Promise.all(refused.map((id) => recordOf(redis, `{sluice:${name}}:`, id)));
    expect(records.every((r) => r === null)).toBe(true);
  }

  test(`${PROCESSES} processes × ${CONNECTIONS} connections flooding: never over the window or the smooth bound; refusals write nothing`, async () => {
    await hammer("flood", 400, 0);
  }, 60_000);

  test(`${PROCESSES} processes × ${CONNECTIONS} connections at about the limit (queues fill and drain): the same guarantees`, async () => {
    await hammer("paced", 40, 600);
  }, 60_000);
});
