/**
 * Limiters in front of real HTTP requests to a local server the case starts. The throttled fetch's
 * cases will join this file (or sit beside it); each needs `serve`, which every platform provides
 * (the browser page through a relay: see `serve.cases.ts` for the contract).
 */
import { ManualClock, WindowLimiter } from "../../src/index.ts";
import { expect } from "./expect.ts";
import { describe, test } from "./harness.ts";

describe("limiter + fetch", () => {
  test("a limiter in virtual time paces real requests to a local server: 2, then 2 more a second later", async (t) => {
    const seen: string[] = [];
    const server = await t.serve((request) => {
      const path = new URL(request.url).pathname;
      seen.push(path);
      return new Response(`hello ${path}`, { headers: { "content-type": "text/plain" } });
    });
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 2, interval: 1000, clock });
    const get = (path: string) =>
      limiter.schedule(async () => {
        const response = await fetch(`${server.url}${path}`);
        return `${response.status} ${await response.text()}`;
      });
    const requests = ["/a", "/b", "/c", "/d", "/e"].map(get);
    // Requests granted together travel concurrently, so only the set that reached the server is fixed.
    const arrived = () => [...seen].sort();
    expect(await Promise.all(requests.slice(0, 2))).toEqual(["200 hello /a", "200 hello /b"]);
    expect(arrived()).toEqual(["/a", "/b"]); // the others wait for the limiter, not for the network
    await clock.advance(1000);
    expect(await Promise.all(requests.slice(2, 4))).toEqual(["200 hello /c", "200 hello /d"]);
    expect(arrived()).toEqual(["/a", "/b", "/c", "/d"]);
    await clock.advance(1000);
    expect(await requests[4]).toBe("200 hello /e");
    expect(seen.length).toBe(5);
  }, { needs: ["serve"] });
});
