/**
 * Red team: the GitHub profile's server-timed retries and pauses (`pauseDimensions: ["requests"]`;
 * a secondary limit is the account's, so it pauses every resource — see github-profile.ts) against
 * the simulated GitHub behind msw, in virtual time. The simulator's `secondaryLimit` hook sees every request: it is the server's
 * arrival log.
 */
import { http } from "msw";
import { setupServer } from "msw/node";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createThrottledFetch, ManualClock } from "../../src/index.ts";
import { githubHandler } from "../../src/testing-msw.ts";
import { github } from "../../src/vendors.ts";

const server = setupServer();
beforeAll(() => server.listen());
afterAll(() => server.close());

async function drive<T>(promise: Promise<T>, clock: ManualClock): Promise<T> {
  let done = false;
  promise.then(() => (done = true), () => (done = true));
  for (let i = 0; i < 3000 && !done; i++) {
    await new Promise((resolve) => setTimeout(resolve, 2));
    if (!done && clock.nextTimerAt !== undefined) await clock.advanceTo(clock.nextTimerAt);
  }
  return promise;
}

test("a secondary limit on search pauses every resource: core and search both wait for retry-after", async () => {
  const clock = new ManualClock();
  const seen: { resource: string; now: number }[] = [];
  let refused = false;
  const gh = githubHandler(http, {
    clock,
    simulator: {
      secondaryLimit: ({ resource, now }) => {
        seen.push({ resource, now });
        if (resource === "search" && !refused) {
          refused = true;
          return 30_000;
        }
        return undefined;
      },
    },
  });
  server.use(gh.handler);
  const throttles: { delay: number; paused: number }[] = [];
  const others: Promise<Response>[] = [];
  let api!: typeof fetch;
  api = createThrottledFetch({
    ...github({ clock }),
    onThrottle: (e) => {
      throttles.push({ delay: e.delay, paused: e.paused });
      if (others.length === 0) {
        for (let i = 0; i < 3; i++) others.push(api("https://api.github.com/repos/o/r"), api("https://api.github.com/search/issues?q=x"));
      }
    },
  }) as typeof fetch;
  const first = await drive(api("https://api.github.com/search/issues?q=first"), clock);
  expect(first.status).toBe(200);
  const rest = await drive(Promise.all(others), clock);
  expect(rest.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
  expect(throttles[0]).toEqual({ delay: 30_000, paused: 30_000 });
  const search = seen.filter((s) => s.resource === "search").map((s) => s.now);
  const core = seen.filter((s) => s.resource === "core").map((s) => s.now);
  expect(search[0]).toBe(0);
  expect(search).toHaveLength(5);
  for (const t of search.slice(1)) expect(t).toBeGreaterThanOrEqual(30_000);
  expect(core).toHaveLength(3);
  for (const t of core) expect(t).toBeGreaterThanOrEqual(30_000);
  expect(gh.fetch.stats.byStatus).toEqual({ 200: 7, 403: 1 });
});
