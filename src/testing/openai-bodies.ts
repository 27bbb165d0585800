/**
 * The bodies the OpenAI simulator sends: a chat completion, its server-sent-event stream, and the
 * error envelope. Shapes follow OpenAI's API reference (`chat.completion`, `chat.completion.chunk`,
 * `{ error: { message, type, param, code } }`); content is filler, since only sizes matter here.
 *
 * @module
 */

/**
 * Token counts as OpenAI reports them in `usage`.
 *
 * @example
 * ```ts
 * const { usage } = (await response.json()) as { usage: OpenAIUsage };
 * ```
 */
export interface OpenAIUsage {
  /** Tokens in the prompt. */
  readonly prompt_tokens: number;
  /** Tokens generated. */
  readonly completion_tokens: number;
  /** prompt_tokens + completion_tokens. */
  readonly total_tokens: number;
}

/** What one completion produced. @internal */
export interface Completion {
  readonly id: string;
  readonly created: number;
  readonly model: string;
  readonly choices: readonly { readonly tokens: number; readonly finish: "stop" | "length" }[];
  readonly usage: OpenAIUsage;
}

/** Filler text of about `tokens` tokens (4 characters each, as the simulator counts). @internal */
export const filler = (tokens: number): string => "lore".repeat(tokens);

/** A `chat.completion` object. @internal */
export function completionBody(c: Completion): unknown {
  return {
    id: c.id,
    object: "chat.completion",
    created: c.created,
    model: c.model,
    choices: c.choices.map((choice, index) => ({
      index,
      message: { role: "assistant", content: filler(choice.tokens), refusal: null },
      logprobs: null,
      finish_reason: choice.finish,
    })),
    usage: c.usage,
  };
}

/**
 * The stream of a completion: per choice a role chunk, a content chunk and a finish chunk, then —
 * with `stream_options.include_usage` — a last chunk with empty `choices` and the `usage` (every
 * other chunk then carries `usage: null`), then `data: [DONE]`. @internal
 */
export function completionStream(c: Completion, includeUsage: boolean): string {
  const base = { id: c.id, object: "chat.completion.chunk", created: c.created, model: c.model };
  const usageNull = includeUsage ? { usage: null } : {};
  const events: unknown[] = [];
  c.choices.forEach((choice, index) => {
    const chunk = (delta: object, finish: string | null) => ({
      ...base,
      choices: [{ index, delta, logprobs: null, finish_reason: finish }],
      ...usageNull,
    });
    events.push(chunk({ role: "assistant", content: "" }, null));
    events.push(chunk({ content: filler(choice.tokens) }, null));
    events.push(chunk({}, choice.finish));
  });
  if (includeUsage) events.push({ ...base, choices: [], usage: c.usage });
  return events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("") + "data: [DONE]\n\n";
}

/** OpenAI's error envelope. @internal */
export function errorBody(message: string, type: string, code: string | null): unknown {
  return { error: { message, type, param: null, code } };
}
