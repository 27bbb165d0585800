// Red team (fetch): "At the documented limit, zero 429s" / "one budget … never exceed what an API
// allows" — with an API that redirects (a renamed resource: 301/302 to its new path). The
// underlying fetch follows redirects inside one attempt, so every hop reaches the server on one
// permit. Reference model: a strict server counting every request it receives.
//
// Decision (fetchfix): documented, not changed. Following redirects ourselves would have to redo
// fetch's redirect rules (303 → GET and a dropped body, credentials stripped across origins, a
// browser's opaque manual redirects) and would turn one fetch call into several, which the
// "fetch's own semantics" promise forbids. The README `permits` row says: an attempt is one call of
// the underlying fetch, whose followed redirects ride on its permits; `redirect: "manual"` (calling
// again with `Location`) or sluice/undici count every hop. These tests pin exactly that.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, test } from "vitest";
import { createThrottledFetch, MaxWaitExceededError } from "../../src/index.ts";

async function redirectingServer() {
  const arrivals: string[] = [];
  const server = createServer((req, res) => {
    arrivals.push(req.url ?? "");
    req.resume();
    if (req.url?.startsWith("/old")) {
      res.writeHead(302, { location: req.url.replace("/old", "/new") });
      return res.end();
    }
    res.end("ok");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { arrivals, url, close };
}

describe("red team: redirects and the budget", () => {
  test("a redirect the underlying fetch follows rides on its attempt's permit, as documented (limit 2 per minute: 2 calls, 4 arrivals)", async () => {
    // Was "DEFECT: … makes more requests to the server than its permits": the README did not say
    // so. It now does (the `permits` row); this pins the documented behaviour: 2 permits, 4 hops.
    const srv = await redirectingServer();
    try {
      const api = createThrottledFetch({ limit: 2, interval: 60_000, maxWait: 0 });
      for (const n of [1, 2]) expect(await (await api(`${srv.url}/old/${n}`)).text()).toBe("ok");
      expect(srv.arrivals).toEqual(["/old/1", "/new/1", "/old/2", "/new/2"]);
      // Both permits were spent by the 2 calls: a third call is refused, not sent.
      await expect(api(`${srv.url}/new/3`)).rejects.toBeInstanceOf(MaxWaitExceededError);
      expect(srv.arrivals).toHaveLength(4);
    } finally {
      await srv.close();
    }
  });

  test("with redirect: \"manual\", each hop is a call of its own and takes its permit (the server never sees more than the limit)", async () => {
    const srv = await redirectingServer();
    try {
      const api = createThrottledFetch({ limit: 2, interval: 60_000, maxWait: 0 });
      const first = await api(`${srv.url}/old/1`, { redirect: "manual" });
      expect(first.status).toBe(302);
      const location = new URL(first.headers.get("location")!, `${srv.url}/old/1`).href;
      expect(await (await api(location, { redirect: "manual" })).text()).toBe("ok");
      await expect(api(`${srv.url}/old/2`, { redirect: "manual" })).rejects.toBeInstanceOf(MaxWaitExceededError);
      expect(srv.arrivals).toEqual(["/old/1", "/new/1"]);
    } finally {
      await srv.close();
    }
  });

  test("sluice/undici: undici's fetch with a throttled dispatcher takes a permit per hop", async () => {
    const { Agent, fetch: ufetch } = await import("undici");
    const { throttle } = await import("../../src/undici.ts");
    const srv = await redirectingServer();
    const agent = new Agent().compose(throttle({ limit: 2, interval: 60_000, maxWait: 0 }));
    try {
      expect(await (await ufetch(`${srv.url}/old/1`, { dispatcher: agent })).text()).toBe("ok");
      // Both permits went to the 2 hops: a third request is refused (undici wraps the refusal).
      await expect(ufetch(`${srv.url}/new/2`, { dispatcher: agent })).rejects.toMatchObject({ cause: expect.any(MaxWaitExceededError) });
      expect(srv.arrivals).toEqual(["/old/1", "/new/1"]);
    } finally {
      await agent.close();
      await srv.close();
    }
  });
});
