/**
 * The tap over a real connection (Node's fetch and node:http): the caller's cancel reaches the
 * server, and a whole stream arrives intact with its usage. Causal: each step awaits the event it
 * depends on (the server's `close`), never a timer.
 */
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, expect, test } from "vitest";
import { tapUsage } from "../../src/vendors/index.ts";

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

function serve(handler: (res: ServerResponse) => void): Promise<string> {
  server = createServer((_req, res) => handler(res));
  return new Promise((resolve) => server!.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server!.address() as AddressInfo).port}/`)));
}

test("a caller's cancel closes the server's stream", async () => {
  let closed!: () => void;
  const serverSawClose = new Promise<void>((resolve) => (closed = resolve));
  const url = await serve((res) => {
    res.on("close", closed);
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write('data: {"choices":[{"delta":{"content":"hé"}}],"usage":null}\n\n'); // then the server waits for ever
  });
  const { response, usage } = tapUsage(await fetch(url), { vendor: "openai" });
  const reader = response.body!.getReader();
  const first = await reader.read();
  expect(new TextDecoder().decode(first.value)).toContain("hé");
  await reader.cancel(new Error("enough"));
  await serverSawClose;
  expect(await usage).toBeUndefined();
});

test("a whole stream arrives intact, with its usage", async () => {
  const events = [
    'data: {"choices":[{"delta":{"content":"日本"}}],"usage":null}\r\n\r\n',
    'data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}\r\n\r\n',
    "data: [DONE]\r\n\r\n",
  ];
  const url = await serve((res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    const bytes = Buffer.from(events.join(""));
    // Cut inside the multi-byte characters and the CRLFs, one write each.
    for (let at = 0; at < bytes.length; at += 7) res.write(bytes.subarray(at, at + 7));
    res.end();
  });
  const { response, usage } = tapUsage(await fetch(url), { vendor: "openai" });
  expect(response.headers.get("content-type")).toBe("text/event-stream");
  expect(response.url).toBe(url);
  expect(await response.text()).toBe(events.join(""));
  expect(await usage).toEqual({ inputTokens: 12, outputTokens: 3, totalTokens: 15 });
});
