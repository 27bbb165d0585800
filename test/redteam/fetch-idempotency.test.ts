// Red team (fetch): idempotencyKey — "a random UUID, identical on every attempt of one call, new for
// each call, a key you set yourself is kept — and the request is then retried like an idempotent
// one" — with 20 interleaved POSTs, each failing once with a bare 500.
import { describe, expect, test } from "vitest";
import { createThrottledFetch, ManualClock, WindowLimiter } from "../../src/index.ts";

const flush = async (turns = 10) => {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setImmediate(r));
};

describe("red team: idempotency keys under concurrency", () => {
  test("one key per call, the same on its retry, never shared between calls; a caller's own key kept", async () => {
    const clock = new ManualClock();
    const seen = new Map<string, { keys: string[]; bodies: string[] }>();
    const api = createThrottledFetch({
      limiter: new WindowLimiter({ limit: 5, interval: 100, clock }),
      clock,
      random: () => 0,
      idempotencyKey: true,
      retry: { budget: false },
      fetch: async (input, init) => {
        const request = new Request(input, init);
        const id = new URL(request.url).pathname;
        const entry = seen.get(id) ?? { keys: [], bodies: [] };
        seen.set(id, entry);
        entry.keys.push(request.headers.get("idempotency-key") ?? "none");
        entry.bodies.push(await request.text());
        return entry.keys.length === 1 ? new Response("x", { status: 500 }) : new Response("ok");
      },
    });
    const calls = Array.from({ length: 20 }, (_, i) =>
      api(`https://i.test/c${i}`, {
        method: "POST",
        body: `payload ${i}`,
        headers: i === 7 ? { "Idempotency-Key": "mine-7" } : { "x-n": String(i) },
      }));
    for (let i = 0; i < 100; i++) {
      await flush(3);
      await clock.advance(50);
    }
    const statuses = await Promise.all(calls.map(async (p) => (await p).status));
    expect(statuses.every((s) => s === 200)).toBe(true);
    const allKeys = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const entry = seen.get(`/c${i}`)!;
      expect(entry.keys).toHaveLength(2);
      expect(entry.keys[0]).toBe(entry.keys[1]);
      expect(entry.bodies).toEqual([`payload ${i}`, `payload ${i}`]);
      if (i === 7) expect(entry.keys[0]).toBe("mine-7");
      allKeys.add(entry.keys[0]!);
    }
    expect(allKeys.size).toBe(20);
  });
});
