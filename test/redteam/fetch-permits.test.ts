// Red team (fetch): "every attempt takes permits, retries included, so a retry never jumps the
// queue or exceeds the limit" — static permits (lean path), a permits function, and a cost.
import { describe, expect, test } from "vitest";
import { createThrottledFetch, ManualClock, WindowLimiter } from "../../src/index.ts";
import type { ThrottledFetchOptions } from "../../src/http/options.ts";

const flush = async (turns = 10) => {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setImmediate(r));
};

const variants: Record<string, Partial<ThrottledFetchOptions>> = {
  "permits: 3": { permits: 3 },
  "permits: () => 3": { permits: () => 3 },
  "cost: 3 (reservations)": { cost: 3 },
  "cost: 3 + maxConcurrent": { cost: 3, maxConcurrent: 10 },
};

describe("red team: retries take permits and keep their place", () => {
  for (const [name, extra] of Object.entries(variants)) {
    test(name, async () => {
      const clock = new ManualClock();
      const sent: string[] = [];
      let failed = false;
      const api = createThrottledFetch({
        limiter: new WindowLimiter({ limit: 6, interval: 1000, clock }),
        clock,
        random: () => 0,
        ...extra,
        fetch: async (input) => {
          const path = new URL(String(input)).pathname;
          sent.push(`${clock.now()} ${path}`);
          if (path === "/a" && !failed) {
            failed = true;
            return new Response("x", { status: 503 });
          }
          return new Response("ok");
        },
      });
      const calls = [api("https://t.test/a"), api("https://t.test/b"), api("https://t.test/c")];
      for (let i = 0; i < 40; i++) {
        await flush(3);
        await clock.advance(100);
      }
      const rs = await Promise.all(calls);
      for (const r of rs) await r.text();
      expect(rs.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(sent).toEqual(["0 /a", "0 /b", "1000 /a", "1000 /c"]);
    });
  }
});
