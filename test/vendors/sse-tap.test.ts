import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { SseScanner, tapUsage, type SseEvent, type Usage } from "../../src/vendors/index.ts";
import { Reach } from "../reach.ts";

const encoder = new TextEncoder();

/** A source body that hands out `chunks` one per pull (no read-ahead) and records pulls and cancels. */
function source(chunks: Uint8Array[], failAfter?: number) {
  const state = { pulled: 0, cancelled: undefined as unknown, cancels: 0 };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (failAfter !== undefined && state.pulled === failAfter) {
        controller.error(new Error("connection reset"));
        return;
      }
      if (state.pulled === chunks.length) {
        controller.close();
        return;
      }
      controller.enqueue(chunks[state.pulled++]!);
    },
    cancel(reason) {
      state.cancels++;
      state.cancelled = reason;
    },
  }, { highWaterMark: 0 });
  return { stream, state };
}

async function readChunks(response: Response, limit = Infinity): Promise<Uint8Array[]> {
  const reader = response.body!.getReader();
  const out: Uint8Array[] = [];
  while (out.length < limit) {
    const { done, value } = await reader.read();
    if (done) break;
    out.push(value);
  }
  reader.releaseLock();
  return out;
}

/** One SSE stream as text lines, with where the event that carries the final usage ends. */
interface Script {
  /** Lines with their terminators. */
  readonly lines: string[];
  readonly usage: Usage | undefined;
  /** Index in `lines` of the blank line that dispatches the event completing the usage (-1: none). */
  readonly usageLine: number;
}

const TERMINATORS = ["\n", "\r\n", "\r"] as const;

/** Text with multi-byte UTF-8 characters (2, 3 and 4 bytes). */
const text = fc.string({ unit: fc.constantFrom("a", " ", "é", "日", "😀", "\u2028", "\\", '"'), maxLength: 12 });

/** Appends `line` with a terminator; a LF right after a lone CR would merge into CRLF, so it becomes CRLF. */
function pushLine(lines: string[], line: string, terminator: string): void {
  const previous = lines[lines.length - 1];
  lines.push(line + (previous?.endsWith("\r") && terminator === "\n" ? "\r\n" : terminator));
}

const openaiScript: fc.Arbitrary<Script> = fc.record({
  deltas: fc.array(text, { maxLength: 6 }),
  terminators: fc.array(fc.constantFrom(...TERMINATORS), { minLength: 40, maxLength: 40 }),
  withUsage: fc.boolean(),
  nullUsage: fc.boolean(),
  comments: fc.boolean(),
  usage: fc.record({ prompt: fc.nat(100_000), completion: fc.nat(100_000) }),
}).map(({ deltas, terminators, withUsage, nullUsage, comments, usage }) => {
  const lines: string[] = [];
  let t = 0;
  const event = (data: string) => {
    if (comments) pushLine(lines, ": keep-alive", terminators[t++ % terminators.length]!);
    pushLine(lines, `data: ${data}`, terminators[t++ % terminators.length]!);
    pushLine(lines, "", terminators[t++ % terminators.length]!);
  };
  for (const content of deltas) {
    event(JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content } }], ...(nullUsage ? { usage: null } : {}) }));
  }
  let usageLine = -1;
  if (withUsage) {
    event(JSON.stringify({ id: "chatcmpl-1", choices: [], usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion } }));
    usageLine = lines.length - 1;
  }
  event("[DONE]");
  return {
    lines,
    usageLine,
    usage: withUsage ? { inputTokens: usage.prompt, outputTokens: usage.completion, totalTokens: usage.prompt + usage.completion } : undefined,
  };
});

const anthropicScript: fc.Arbitrary<Script> = fc.record({
  deltas: fc.array(text, { maxLength: 6 }),
  terminators: fc.array(fc.constantFrom(...TERMINATORS), { minLength: 40, maxLength: 40 }),
  withDelta: fc.boolean(),
  input: fc.nat(100_000),
  cacheRead: fc.nat(100_000),
  output: fc.nat(100_000),
}).map(({ deltas, terminators, withDelta, input, cacheRead, output }) => {
  const lines: string[] = [];
  let t = 0;
  const event = (type: string, data: object) => {
    pushLine(lines, `event: ${type}`, terminators[t++ % terminators.length]!);
    pushLine(lines, `data: ${JSON.stringify({ type, ...data })}`, terminators[t++ % terminators.length]!);
    pushLine(lines, "", terminators[t++ % terminators.length]!);
  };
  event("message_start", { message: { id: "msg_1", role: "assistant", content: [], usage: { input_tokens: input, cache_read_input_tokens: cacheRead, output_tokens: 1 } } });
  event("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
  for (const delta of deltas) event("content_block_delta", { index: 0, delta: { type: "text_delta", text: delta } });
  event("ping", {});
  let usageLine = -1;
  if (withDelta) {
    event("message_delta", { delta: { stop_reason: "end_turn" }, usage: { output_tokens: output } });
    usageLine = lines.length - 1;
  }
  event("message_stop", {});
  return {
    lines,
    usageLine,
    usage: withDelta ? { inputTokens: input, outputTokens: output, cacheReadInputTokens: cacheRead, totalTokens: input + output + cacheRead } : undefined,
  };
});

/** The script's bytes cut at random points, some aimed inside CRLFs and UTF-8 characters. */
function cut(script: Script, randomCuts: number[], aimed: number[]) {
  const bytes = encoder.encode(script.lines.join(""));
  const tricky: number[] = [];
  for (let i = 1; i < bytes.length; i++) {
    if ((bytes[i - 1] === 0x0d && bytes[i] === 0x0a) || (bytes[i]! & 0xc0) === 0x80) tricky.push(i);
  }
  const points = new Set<number>();
  for (const r of randomCuts) if (bytes.length > 1) points.add(1 + (r % (bytes.length - 1)));
  for (const a of aimed) if (tricky.length > 0) points.add(tricky[a % tricky.length]!);
  const sorted = [...points].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let at = 0;
  for (const p of [...sorted, bytes.length]) {
    if (p > at) chunks.push(bytes.slice(at, p));
    at = p;
  }
  // Where the usage event is dispatched: just past the first byte of its blank line's terminator.
  const dispatchAt = script.usageLine === -1
    ? Infinity
    : encoder.encode(script.lines.slice(0, script.usageLine).join("")).length + 1;
  return {
    bytes,
    chunks,
    dispatchAt,
    crlfSplit: sorted.some((p) => bytes[p - 1] === 0x0d && bytes[p] === 0x0a),
    utf8Split: sorted.some((p) => (bytes[p]! & 0xc0) === 0x80),
  };
}

const cuts = fc.tuple(fc.array(fc.nat(), { maxLength: 30 }), fc.array(fc.nat(), { maxLength: 4 }));

describe("tapUsage", () => {
  for (const [vendor, script] of [["openai", openaiScript], ["anthropic", anthropicScript]] as const) {
    test(`${vendor}: the caller gets the same chunks, byte for byte, and usage is read at any chunk boundaries`, async () => {
      const reach = new Reach(`${vendor} tap`);
      await fc.assert(fc.asyncProperty(script, cuts, async (s, [randomCuts, aimed]) => {
        reach.run();
        const { chunks, crlfSplit, utf8Split } = cut(s, randomCuts, aimed);
        reach.hit("CRLF split between chunks", crlfSplit);
        reach.hit("UTF-8 character split between chunks", utf8Split);
        reach.hit(s.usage === undefined ? "no usage" : "usage", true);
        const { stream } = source(chunks);
        const { response, usage } = tapUsage(new Response(stream, { status: 200, headers: { "content-type": "text/event-stream" } }), { vendor });
        expect(response.status).toBe(200);
        expect(response.headers.get("content-type")).toBe("text/event-stream");
        const received = await readChunks(response);
        expect(received).toEqual(chunks);
        expect(await usage).toEqual(s.usage);
      }), { numRuns: 300 });
      reach.atLeast({ "CRLF split between chunks": 85, "UTF-8 character split between chunks": 85, usage: 90, "no usage": 80 });
    });

    test(`${vendor}: a caller's cancel reaches the server's stream; usage is what was complete by then`, async () => {
      const reach = new Reach(`${vendor} cancel`);
      // Half the cancels fall in the last few chunks, where the usage event is.
      const point = fc.oneof(fc.nat(), fc.integer({ min: -3, max: -1 }));
      await fc.assert(fc.asyncProperty(script, cuts, point, async (s, [randomCuts, aimed], k) => {
        reach.run();
        const { chunks, dispatchAt } = cut(s, randomCuts, aimed);
        const read = k >= 0 ? k % (chunks.length + 1) : Math.max(0, chunks.length + 1 + k);
        const { stream, state } = source(chunks);
        const { response, usage } = tapUsage(new Response(stream), { vendor });
        await readChunks(response, read);
        expect(state.pulled).toBe(read); // nothing read ahead of the caller
        const delivered = chunks.slice(0, read).reduce((n, c) => n + c.length, 0);
        const reason = new Error("caller stopped");
        await response.body!.cancel(reason);
        expect(state.cancels).toBe(1);
        expect(state.cancelled).toBe(reason);
        const complete = delivered >= dispatchAt;
        reach.hit(complete ? "cancelled after the usage" : "cancelled before the usage", s.usage !== undefined);
        expect(await usage).toEqual(complete ? s.usage : undefined);
      }), { numRuns: 300 });
      reach.atLeast({ "cancelled after the usage": 12, "cancelled before the usage": 45 });
    });
  }

  test("a server error mid-stream reaches the caller; usage is undefined", async () => {
    const { stream } = source([encoder.encode('data: {"choices":[]}\n\n')], 1);
    const { response, usage } = tapUsage(new Response(stream), { vendor: "openai" });
    await expect(response.text()).rejects.toThrow("connection reset");
    expect(await usage).toBeUndefined();
  });

  test("a huge line passes through whole and the usage after it is still read", async () => {
    const huge = `data: ${"x".repeat(3_000_000)}\n\n`;
    const usageEvent = 'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}\n\ndata: [DONE]\n\n';
    const bytes = encoder.encode(huge + usageEvent);
    const chunks: Uint8Array[] = [];
    for (let at = 0; at < bytes.length; at += 65_536) chunks.push(bytes.slice(at, at + 65_536));
    const { stream } = source(chunks);
    const { response, usage } = tapUsage(new Response(stream), { vendor: "openai", maxLineBytes: 4_096 });
    expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes);
    expect(await usage).toEqual({ inputTokens: 5, outputTokens: 7, totalTokens: 12 });
  });

  test("a body-less response is returned as is, with no usage", async () => {
    const original = new Response(null, { status: 204 });
    const { response, usage } = tapUsage(original, { vendor: "anthropic" });
    expect(response).toBe(original);
    expect(await usage).toBeUndefined();
  });

  test("options and bodies are checked", async () => {
    const used = new Response("x");
    await used.text();
    expect(() => tapUsage(used, { vendor: "openai" })).toThrow(TypeError);
    expect(() => tapUsage(new Response("x"), { vendor: "gemini" as "openai" })).toThrow(new TypeError('`vendor` must be "openai" or "anthropic", got "gemini"'));
    expect(() => tapUsage(new Response("x"), { vendor: "openai", maxLineBytes: 0 })).toThrow(new RangeError("`maxLineBytes` must be a positive integer, got 0"));
  });

  test("the Responses API's response.completed event settles OpenAI usage", async () => {
    const body = 'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"hi"}\n\n' +
      'event: response.completed\ndata: {"type":"response.completed","response":{"usage":{"input_tokens":3,"output_tokens":4,"total_tokens":7}}}\n\n';
    const { response, usage } = tapUsage(new Response(body), { vendor: "openai" });
    expect(await response.text()).toBe(body);
    expect(await usage).toEqual({ inputTokens: 3, outputTokens: 4, totalTokens: 7 });
  });
});

describe("SseScanner", () => {
  test("memory stays bounded by the cap on a huge line and a huge event, and parsing resumes after them", () => {
    const reach = new Reach("scanner bound");
    fc.assert(fc.property(fc.array(fc.oneof(fc.integer({ min: 1, max: 700 }), fc.integer({ min: 1, max: 50_000 })), { minLength: 1, maxLength: 40 }), fc.boolean(), (sizes, manyLines) => {
      reach.run();
      const max = 1_024;
      const events: SseEvent[] = [];
      const scanner = new SseScanner((e) => events.push(e), max);
      // Either one line far over the cap, or many lines under it whose event data goes over it.
      const junk = manyLines ? "data: 0123456789\n".repeat(5_000) : `data: ${"y".repeat(100_000)}\n`;
      const bytes = encoder.encode(`${junk}\ndata: after\n\n`);
      let at = 0;
      let i = 0;
      let most = 0;
      while (at < bytes.length) {
        const size = sizes[i++ % sizes.length]!;
        scanner.push(bytes.subarray(at, at + size));
        at += size;
        most = Math.max(most, scanner.bufferedBytes);
      }
      expect(most).toBeLessThanOrEqual(max);
      const filled = most >= max / 2;
      reach.hit("buffer filled to half the cap or more", filled);
      expect(events).toEqual([{ event: "message", data: "after" }]);
    }), { numRuns: 60 });
    // A first chunk far over the cap skips the line at once and never fills the buffer; the rest do.
    reach.atLeast({ "buffer filled to half the cap or more": 15 });
  });

  test.each<[string, string, SseEvent[]]>([
    ["fields, comments, multi-line data, a BOM", "\ufeffevent: a\r\n: comment\r\ndata: 1\r\ndata:2\r\nid: 7\r\n\r\n", [{ event: "a", data: "1\n2" }]],
    ["an event without data is not dispatched", "event: a\n\ndata: x\n\n", [{ event: "message", data: "x" }]],
    ["a field without a colon", "data\n\n", [{ event: "message", data: "" }]],
    ["an unterminated last event is dropped", "data: x\n\ndata: y", [{ event: "message", data: "x" }]],
    ["lone CRs", "data: x\r\rdata: y\r\r", [{ event: "message", data: "x" }, { event: "message", data: "y" }]],
  ])("%s", (_name, input, expected) => {
    const events: SseEvent[] = [];
    new SseScanner((e) => events.push(e), 1_024).push(encoder.encode(input));
    expect(events).toEqual(expected);
  });
});
