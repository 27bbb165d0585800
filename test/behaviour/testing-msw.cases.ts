/**
 * `sluice/testing/msw` on every runtime. The entry imports nothing from msw (msw's `http` is passed
 * in), so these cases hand it a stand-in with msw's `http.all(path, resolver)` shape and call the
 * resolver as msw would: no msw, and no import map for it, on Deno, Bun or in the browser. The
 * interception by msw itself is covered under Node (test/testing/msw-adapter.test.ts).
 */
import { ManualClock } from "../../src/testing.ts";
import { githubHandler, openaiHandler } from "../../src/testing-msw.ts";
import { expect } from "./expect.ts";
import { describe, test } from "./harness.ts";

type Resolver = (info: { request: Request }) => Response | Promise<Response>;
const http = { all: (path: string, resolver: Resolver) => ({ path, resolver }) };

describe("sluice/testing/msw", () => {
  test("openaiHandler answers under api.openai.com from the simulator: 2 RPM, the third is a 429 with retry-after-ms", async () => {
    const clock = new ManualClock();
    const { handler, fetch } = openaiHandler(http, { clock, simulator: { defaultLimits: { rpm: 2, tpm: 10_000 } } });
    expect(handler.path).toBe("https://api.openai.com/*");
    const ask = () =>
      handler.resolver({
        request: new Request("https://api.openai.com/v1/chat/completions", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
        }),
      });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await ask()).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect(fetch.stats.byStatus).toEqual({ 200: 2, 429: 1 });
  });

  test("githubHandler at another origin, with x-ratelimit-* headers", async () => {
    const clock = new ManualClock();
    const { handler } = githubHandler(http, { clock, origin: "https://ghe.example.com" });
    expect(handler.path).toBe("https://ghe.example.com/*");
    const response = await handler.resolver({ request: new Request("https://ghe.example.com/repos/o/r") });
    expect(response.status).toBe(200);
    expect(response.headers.get("x-ratelimit-resource")).toBe("core");
    expect(response.headers.get("x-ratelimit-remaining")).toBe("4999");
  });
});
