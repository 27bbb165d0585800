// Red team (fetch): priorities — "higher goes first among callers waiting on the same limiter; FIFO
// within a priority" — and a retry keeping its place, lean (init.priority) vs a priority function.
import { describe, expect, test } from "vitest";
import { createThrottledFetch, ManualClock, WindowLimiter } from "../../src/index.ts";

const flush = async (turns = 10) => {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setImmediate(r));
};

async function runOrder(byFunction: boolean) {
  const clock = new ManualClock();
  const sent: string[] = [];
  let failedOnce = false;
  const api = createThrottledFetch({
    limiter: new WindowLimiter({ limit: 1, interval: 1000, clock, priorityAging: Infinity }), // strict: no aging
    clock,
    random: () => 0,
    ...(byFunction && { priority: (r: Request) => Number(new URL(r.url).searchParams.get("p")) }),
    fetch: async (input) => {
      const url = new URL(String(input));
      sent.push(url.pathname);
      if (url.pathname === "/h1" && !failedOnce) {
        failedOnce = true;
        return new Response("x", { status: 503 }); // retried at once (backoff 0), keeping its place
      }
      return new Response("ok");
    },
  });
  const calls: Promise<Response>[] = [api("https://p.test/first?p=0")];
  await flush();
  const plan: [string, RequestPriority][] = [["l1", "low"], ["a1", "auto"], ["h1", "high"], ["l2", "low"], ["h2", "high"], ["a2", "auto"]];
  for (const [name, priority] of plan) {
    const p = priority === "high" ? 1 : priority === "low" ? -1 : 0;
    calls.push(api(`https://p.test/${name}?p=${p}`, byFunction ? undefined : { priority }));
  }
  for (let i = 0; i < 100; i++) {
    await flush(3);
    await clock.advance(100);
  }
  await Promise.all(calls);
  return sent;
}

describe("red team: priorities", () => {
  for (const byFunction of [false, true]) {
    test(`${byFunction ? "priority(request)" : "init.priority"}: high first, FIFO within a level; a retried high call goes before later highs`, async () => {
      const sent = await runOrder(byFunction);
      // h1 at 1000 → 503 → its retry queues at h1's arrival: ahead of h2 (arrived later).
      expect(sent).toEqual(["/first", "/h1", "/h1", "/h2", "/a1", "/a2", "/l1", "/l2"]);
    });
  }
});
