/**
 * The interceptor's type fits the `compose()` of undici 8 AND undici 7 (the `undici7` alias), with
 * no cast — checked by `tsc` (npm run typecheck) — and the composed dispatcher keeps the agent's type.
 */
import { Agent as Agent7, type Dispatcher as Dispatcher7, interceptors as interceptors7 } from "undici7";
import { Agent, type Dispatcher, interceptors } from "undici";
import { expect, expectTypeOf, test } from "vitest";
import { SmoothLimiter } from "../../src/index.ts";
import { throttle, type UndiciInterceptor } from "../../src/undici.ts";

test("throttle() composes with undici 8 and undici 7, alone or with their retry interceptor", async () => {
  const interceptor: UndiciInterceptor = throttle({ limiter: new SmoothLimiter({ limit: 10 }) });
  const agent8 = new Agent();
  const agent7 = new Agent7();
  const composed8: Dispatcher.ComposedDispatcher = agent8.compose(interceptor, interceptors.retry());
  const composed7: Dispatcher7.ComposedDispatcher = agent7.compose([interceptor, interceptors7.retry()]);
  expectTypeOf(agent8.compose(interceptor)).toEqualTypeOf<Dispatcher.ComposedDispatcher>();
  expect(typeof composed8.dispatch).toBe("function");
  expect(typeof composed7.dispatch).toBe("function");
  await Promise.all([agent8.close(), agent7.close()]);
});
