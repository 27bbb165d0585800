/**
 * Red team (costs): streamed responses settled from the final SSE usage chunk "without buffering the
 * stream the caller reads" (README "Vendor profiles", issue 13). Virtual time with hand-made streams
 * for the accounting; a real local node:http server where the point is what the server sees (a
 * cancel reaching it). (The DEFECT found here is fixed; its test is a regression test now.)
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createThrottledFetch, type KeyedLimiter, ManualClock } from "../../src/index.ts";
import { openai } from "../../src/vendors.ts";

const OPENAI = "https://api.openai.com/v1/chat/completions";
const enc = new TextEncoder();
const chat = (maxTokens: number) => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ model: "m", max_tokens: maxTokens, stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "hi" }] }),
});
const chunk = (text: string) => `data: {"choices":[{"delta":{"content":${JSON.stringify(text)}}}],"usage":null}\n\n`;
const usageChunk = (total: number) => `data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":${total - 5},"total_tokens":${total}}}\n\n`;

function when<T>(clock: ManualClock, p: Promise<T>): { at?: number; value?: T; error?: unknown } {
  const o: { at?: number; value?: T; error?: unknown } = {};
  p.then((v) => { o.at = clock.now(); o.value = v; }, (e: unknown) => { o.at = clock.now(); o.error = e; });
  return o;
}

/** An SSE body made of `parts` that counts how many parts the consumer side has pulled. */
function countingStream(parts: Uint8Array[]) {
  const state = { pulled: 0, cancelled: false };
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (state.pulled >= parts.length) { controller.close(); return; }
      controller.enqueue(parts[state.pulled++]!);
    },
    cancel() { state.cancelled = true; },
  }, { highWaterMark: 0 });
  return { body, state };
}

function profileWith(clock: ManualClock, makeBody: () => ReadableStream<Uint8Array> | string, maxConcurrent?: number, type = "text/event-stream") {
  const profile = openai({ rpm: 1000, tpm: 1000, clock, ...(maxConcurrent !== undefined && { maxConcurrent }) });
  const sent: number[] = [];
  const fetch = (async () => {
    sent.push(clock.now());
    return new Response(makeBody(), { status: 200, headers: { "content-type": type } });
  }) as typeof globalThis.fetch;
  const api = createThrottledFetch({ ...profile, fetch });
  const budget = () => (profile.limiter as KeyedLimiter<string>).get("m");
  return { api, sent, budget };
}

describe("red team stream settle: accounting in virtual time", () => {
  test("read to the end: the reservation (~1000) settles to the usage (10), so a 990-token call goes at once", async () => {
    const clock = new ManualClock();
    const sse = chunk("a") + chunk("b") + usageChunk(10) + "data: [DONE]\n\n";
    const { api, sent } = profileWith(clock, () => sse);
    const r = await api(OPENAI, chat(980));
    expect(await r.text()).toBe(sse);
    await clock.advance(0);
    await api(OPENAI, chat(980));
    expect(sent).toEqual([0, 0]);
  });

  test("the usage chunk split one byte at a time, CRLF line ends, `data:` without a space, comments and a multibyte character split: still settled", async () => {
    const clock = new ManualClock();
    const sse = `: keep-alive\r\n\r\n` + chunk("héllo ✓").replace(/\n/g, "\r\n") + `data:{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}\r\n\r\n` + "data: [DONE]\r\n\r\n";
    const bytes = enc.encode(sse);
    const parts = Array.from(bytes, (b) => Uint8Array.of(b));
    const { api, sent } = profileWith(clock, () => countingStream(parts).body);
    const r = await api(OPENAI, chat(980));
    expect(new TextDecoder().decode(new Uint8Array(await r.arrayBuffer()))).toBe(sse);
    await clock.advance(0);
    await api(OPENAI, chat(980));
    expect(sent).toEqual([0, 0]);
  });

  test("a content line longer than maxLineBytes (64 KiB) before the usage chunk: passed through, and the usage still found", async () => {
    const clock = new ManualClock();
    const sse = chunk("x".repeat(100_000)) + usageChunk(10) + "data: [DONE]\n\n";
    const { api, sent } = profileWith(clock, () => sse);
    const r = await api(OPENAI, chat(980));
    expect((await r.text()).length).toBe(sse.length);
    await clock.advance(0);
    await api(OPENAI, chat(980));
    expect(sent).toEqual([0, 0]);
  });

  test("no buffering: the tap pulls from the server stream only as the caller reads (at most one part ahead)", async () => {
    const clock = new ManualClock();
    const parts = [...Array.from({ length: 50 }, (_, i) => enc.encode(chunk(`t${i}`))), enc.encode(usageChunk(10))];
    let state!: { pulled: number; cancelled: boolean };
    const { api } = profileWith(clock, () => { const s = countingStream(parts); state = s.state; return s.body; });
    const r = await api(OPENAI, chat(980));
    const reader = r.body!.getReader();
    await clock.advance(0);
    expect(state.pulled).toBeLessThanOrEqual(2);
    for (let i = 0; i < 10; i++) await reader.read();
    await clock.advance(0);
    expect(state.pulled).toBeLessThanOrEqual(12);
    await reader.cancel();
  });

  test("the caller cancels midway (before the usage chunk): the cancel reaches the source, the reservation ends counted in full", async () => {
    const clock = new ManualClock();
    const parts = [...Array.from({ length: 20 }, (_, i) => enc.encode(chunk(`t${i}`))), enc.encode(usageChunk(10))];
    let state!: { pulled: number; cancelled: boolean };
    const { api, sent, budget } = profileWith(clock, () => { const s = countingStream(parts); state = s.state; return s.body; });
    const r = await api(OPENAI, chat(980));
    const reader = r.body!.getReader();
    await reader.read();
    await reader.read();
    await reader.cancel("user closed the tab");
    await clock.advance(0);
    expect(state.cancelled).toBe(true);
    expect(budget().stats!().inFlight).toBe(0); // the reservation ended (not left open)
    const second = when(clock, api(OPENAI, chat(980)));
    await clock.advance(0);
    expect(second.at).toBeUndefined(); // ~1000 tokens still counted
    await clock.advance(60_000);
    expect(sent).toEqual([0, 60_000]);
  });

  test("the caller never reads: the reservation stays open and counts in full (documented), and a later read still settles it", async () => {
    const clock = new ManualClock();
    const sse = chunk("a") + usageChunk(10) + "data: [DONE]\n\n";
    const { api, sent, budget } = profileWith(clock, () => sse);
    const r = await api(OPENAI, chat(980));
    await clock.advance(120_000);
    expect(budget().stats!().inFlight).toBe(1);
    await r.text();
    await clock.advance(0);
    expect(budget().stats!().inFlight).toBe(0);
    expect(sent).toEqual([0]);
  });

  test("with the profile's maxConcurrent, a stream nobody reads frees its slot after slotTimeout (counted in full); before, it held the slot for ever and every later call of the model waited for good", async () => {
    // Found by a soak test (2026-11-24): a forgotten response deadlocked its model.
    const clock = new ManualClock();
    const sse = chunk("a") + usageChunk(10) + "data: [DONE]\n\n";
    const { api, sent, budget } = profileWith(clock, () => sse, 1);
    const forgotten = await api(OPENAI, chat(10));
    const next = when(clock, api(OPENAI, chat(10)));
    await clock.advance(29_999);
    expect(next.at).toBeUndefined(); // the one slot is still the unread stream's
    await clock.advance(1);
    expect(next.at).toBe(30_000); // slotTimeout (30 s) without a read: the slot is free
    expect(sent).toEqual([0, 30_000]);
    expect(await forgotten.text()).toBe(sse); // still readable; its usage came too late to refund
    await clock.advance(0);
    expect(budget().stats!().inFlight).toBe(1); // the second call's stream, unread
  });

  test("with the profile's maxConcurrent, a JSON answer nobody reads frees its slot as soon as its usage is read from a clone", async () => {
    const clock = new ManualClock();
    const json = JSON.stringify({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 } });
    const { api, sent } = profileWith(clock, () => json, 1, "application/json");
    await api(OPENAI, chat(10)); // never read
    await api(OPENAI, chat(10));
    expect(sent).toEqual([0, 0]);
  });

  test("a stream that errors midway (connection reset): the caller sees the error, the reservation ends counted in full", async () => {
    const clock = new ManualClock();
    let n = 0;
    const { api, budget } = profileWith(clock, () => new ReadableStream<Uint8Array>({
      pull(controller) {
        if (n++ < 2) controller.enqueue(enc.encode(chunk("x")));
        else controller.error(new TypeError("terminated"));
      },
    }, { highWaterMark: 0 }));
    const r = await api(OPENAI, chat(980));
    await expect(r.text()).rejects.toThrow("terminated");
    await clock.advance(0);
    expect(budget().stats!().inFlight).toBe(0);
  });

  test("a stream without a usage chunk (include_usage not sent) counts its full reservation", async () => {
    const clock = new ManualClock();
    const { api, sent } = profileWith(clock, () => chunk("a") + "data: [DONE]\n\n");
    await (await api(OPENAI, chat(980))).text();
    const second = when(clock, api(OPENAI, chat(980)));
    await clock.advance(0);
    expect(second.at).toBeUndefined();
    await clock.advance(60_000);
    expect(sent).toEqual([0, 60_000]);
  });
});

describe("red team stream settle: a real local server", () => {
  let server: Server;
  let base = "";
  const seen = { closedEarly: 0, chunksWritten: 0 };
  beforeAll(async () => {
    server = createServer((req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      let i = 0;
      const tick = setInterval(() => {
        if (i < 200) { res.write(chunk(`token${i}`)); seen.chunksWritten++; i++; return; }
        clearInterval(tick);
        res.end(usageChunk(10) + "data: [DONE]\n\n");
      }, 5);
      res.on("close", () => { if (!res.writableFinished) seen.closedEarly++; clearInterval(tick); });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  test("the caller cancels the tapped stream after 5 chunks: the server sees the connection closed before it finished (the generation stops)", async () => {
    const profile = openai({ rpm: 1000, tpm: 100_000 });
    const api = createThrottledFetch({ ...profile });
    const r = await api(`${base}/v1/chat/completions`, chat(980));
    const reader = r.body!.getReader();
    for (let i = 0; i < 5; i++) await reader.read();
    const before = seen.chunksWritten;
    await reader.cancel();
    const deadline = Date.now() + 5000;
    while (seen.closedEarly === 0 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 10));
    expect(seen.closedEarly).toBe(1); // causal: the cancel reached the server
    expect(seen.chunksWritten - before).toBeLessThan(150); // it stopped well before the 200 chunks
    expect((profile.limiter as KeyedLimiter<string>).get("m").stats!().inFlight).toBe(0);
  });
});

describe("red team stream settle: slots", () => {
  const sse = chunk("a") + usageChunk(10) + "data: [DONE]\n\n";

  test("fetch maxConcurrent 1 + a tapped stream nobody reads: the slot frees after slotTimeout, not twice that (README: 'A body nobody reads frees its slot after slotTimeout ms')", async () => {
    const clock = new ManualClock();
    const profile = openai({ rpm: 1000, tpm: 100_000, clock });
    const sent: number[] = [];
    const fetch = (async () => { sent.push(clock.now()); return new Response(sse, { status: 200, headers: { "content-type": "text/event-stream" } }); }) as typeof globalThis.fetch;
    const api = createThrottledFetch({ ...profile, fetch, maxConcurrent: 1, slotTimeout: 1000 });
    const first = await api(OPENAI, chat(100));
    const second = when(clock, api(OPENAI, chat(100)));
    await clock.advance(999);
    expect(second.at).toBeUndefined();
    await clock.advance(1);
    await clock.advance(0);
    const observed = second.at;
    await clock.advance(5000);
    // Was 2000: trackBody's idle timer ended the body at 1000, and AttemptHold then armed a second
    // slotTimeout waiting for the actual cost (the tap never resolves it: nobody reads). An idle end
    // now frees the slot at once, the reservation counting as reserved.
    expect({ freedAt: observed ?? second.at }).toEqual({ freedAt: 1000 });
    expect(await first.text()).toBe(sse);
  });

  test("openai({ maxConcurrent: 1 }): cancelling the stream midway frees the slot at once", async () => {
    const clock = new ManualClock();
    const profile = openai({ rpm: 1000, tpm: 100_000, clock, maxConcurrent: 1 });
    const parts = [...Array.from({ length: 10 }, (_, i) => enc.encode(chunk(`t${i}`))), enc.encode(usageChunk(10))];
    const sent: number[] = [];
    const fetch = (async () => { sent.push(clock.now()); return new Response(countingStream(parts).body, { status: 200, headers: { "content-type": "text/event-stream" } }); }) as typeof globalThis.fetch;
    const api = createThrottledFetch({ ...profile, fetch });
    const first = await api(OPENAI, chat(100));
    const second = when(clock, api(OPENAI, chat(100)));
    await clock.advance(500);
    expect(second.at).toBeUndefined();
    const reader = first.body!.getReader();
    await reader.read();
    await reader.cancel();
    await clock.advance(0);
    await clock.advance(0);
    expect(second.at).toBe(500);
    expect(sent).toEqual([0, 500]);
  });
});

describe("red team stream settle: the Responses API", () => {
  test("a streamed Responses API call settles from response.completed's usage (README: 'chat completions, Responses, …')", async () => {
    const clock = new ManualClock();
    const sse = [
      `event: response.created\ndata: {"type":"response.created","response":{"id":"r1","status":"in_progress","usage":null}}\n\n`,
      `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"hi"}\n\n`,
      `event: response.completed\ndata: {"type":"response.completed","response":{"id":"r1","status":"completed","usage":{"input_tokens":5,"output_tokens":5,"total_tokens":10}}}\n\n`,
    ].join("");
    const profile = openai({ rpm: 1000, tpm: 1000, clock });
    const sent: number[] = [];
    const fetch = (async () => { sent.push(clock.now()); return new Response(sse, { status: 200, headers: { "content-type": "text/event-stream" } }); }) as typeof globalThis.fetch;
    const api = createThrottledFetch({ ...profile, fetch });
    const body = (max: number) => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "m", max_output_tokens: max, stream: true, input: "hi" }) });
    const r = await api("https://api.openai.com/v1/responses", body(980));
    expect(await r.text()).toBe(sse);
    await clock.advance(0);
    await api("https://api.openai.com/v1/responses", body(980));
    expect(sent).toEqual([0, 0]); // settled to 10: the second ~990 fit at once
  });
});
