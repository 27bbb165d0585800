/**
 * A response rebuilt around a new body (a drained one held for a refused retry, one that reports
 * its end for `maxConcurrent`), indistinguishable from the original to the caller: the same status,
 * headers object (immutable, as fetch's are), `url`, `redirected` and `type` — on the prototype, so
 * it has no own keys — and a `clone()` that keeps them.
 *
 * @module
 */

type Rebuild = new (body?: BodyInit | null, init?: ResponseInit) => Response;
let RebuiltResponse: Rebuild | undefined;

/**
 * Each rebuilt response's original. Not a private field: the `Response` constructor itself reads
 * `headers` on some runtimes (undici), before a subclass's fields exist — it sees its own then.
 */
const ORIGINAL = new WeakMap<Response, Response>();

/** A status text `new Response()` accepts. */
const LATIN1 = /^[\t\x20-\x7e\x80-\xff]*$/;

/** What a rebuilt response answers from its original (its own `Response` slots hold only the new body). */
const FROM_ORIGINAL = ["statusText", "url", "redirected", "type", "headers"] as const;

/** Made on first use: `Response` is read when a response is rebuilt, not when the module loads. */
function rebuiltClass(): Rebuild {
  if (RebuiltResponse !== undefined) return RebuiltResponse;
  // Named as fetch's own, so that `constructor.name` and a runtime's inspection say `Response`.
  const Base = globalThis.Response;
  const Rebuilt = class Response extends Base {
    override clone(): Response {
      const original = ORIGINAL.get(this);
      const copy = super.clone();
      return original === undefined ? copy : rebuiltResponse(original, copy.body);
    }
  };
  // One getter each, on the prototype (no own keys): the original's value, or fetch's own when the
  // response was made with the constructor rather than rebuilt.
  for (const name of FROM_ORIGINAL) {
    Object.defineProperty(Rebuilt.prototype, name, {
      configurable: true,
      get(this: Response): unknown {
        const original = ORIGINAL.get(this);
        return original === undefined ? Reflect.get(Base.prototype, name, this) : original[name];
      },
    });
  }
  return RebuiltResponse = Rebuilt;
}

/**
 * `original` with `body` in place of its own. @internal
 *
 * @example
 * ```ts
 * const copy = rebuiltResponse(response, bytes); // copy.url === response.url, copy.headers === response.headers
 * ```
 */
export function rebuiltResponse(original: Response, body: BodyInit | null): Response {
  // Built with fetch's own constructor signature (so `new response.constructor(body, init)` makes
  // a plain response, as with fetch's), then tied to its original. A status text beyond Latin-1
  // (Node reads a UTF-8 status line as it is) is no valid `statusText` for a new Response: it is
  // answered from the original instead.
  const statusText = original.statusText;
  const copy = new (rebuiltClass())(body, { status: original.status, headers: original.headers, ...(LATIN1.test(statusText) && { statusText }) });
  ORIGINAL.set(copy, original);
  return copy;
}
