// Red team (fetch): maxConcurrent — "a slot is held until the response body is read to its end,
// cancelled or errors" — with a real server that cuts a body mid-stream, and one whose body the
// caller cancels; lean path vs a caller signal on every call. maxConcurrent: 1, so a slot that is
// never freed would hang the next call (the test's own timeout), and one freed early would let two
// requests be in flight at once (counted server-side).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, test } from "vitest";
import { createThrottledFetch } from "../../src/index.ts";

describe("red team: slots freed at the body's end, cut or cancelled", () => {
  for (const withSignal of [false, true]) {
    test(`${withSignal ? "caller signal" : "lean"}: cut body frees its slot; cancelled body frees its slot`, async () => {
      let inFlight = 0;
      let maxInFlight = 0;
      const server = createServer((req, res) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        res.on("close", () => inFlight--);
        req.resume();
        res.writeHead(200, { "content-type": "text/plain", "content-length": "100000" });
        if (req.url === "/cut") {
          res.write("partial");
          setTimeout(() => res.destroy(), 20);
        } else if (req.url === "/slow") {
          res.write("first chunk"); // the rest never comes: the caller cancels
        } else res.end("x".repeat(100000));
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const api = createThrottledFetch({ maxConcurrent: 1 });
      const init = () => (withSignal ? { signal: new AbortController().signal } : undefined);
      try {
        const cut = await api(`${url}/cut`, init());
        const nextAfterCut = api(`${url}/ok`, init()); // queued behind the cut body's slot
        await expect(cut.text()).rejects.toBeDefined();
        expect((await (await nextAfterCut).text()).length).toBe(100000);
        // Causal for a cut: the server closed the response before the client could see the error.
        expect(maxInFlight).toBe(1);
        const slow = await api(`${url}/slow`, init());
        const reader = slow.body!.getReader();
        await reader.read();
        const nextAfterCancel = api(`${url}/ok`, init());
        await reader.cancel();
        expect((await (await nextAfterCancel).text()).length).toBe(100000);
        // (No server-side count after a cancel: the client frees the slot when it cancels, before
        // the server can learn of it, so an overlap there is expected, not a defect.)
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    }, 20_000);
  }
});
