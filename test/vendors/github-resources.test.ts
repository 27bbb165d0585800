/**
 * `github()` through `createThrottledFetch` against the simulated GitHub, in virtual time: a primary
 * refusal pauses the resource the response names (`x-ratelimit-resource`) — every caller of it
 * waits until GitHub's time — and no other resource; a secondary refusal (the account's limit)
 * pauses every resource.
 */
import { describe, expect, test } from "vitest";
import { createThrottledFetch, type ThrottleEvent } from "../../src/index.ts";
import { createSimulatedFetch, GitHubSimulator, type GitHubSimulatorOptions, ManualClock } from "../../src/testing.ts";
import { github, type GitHubProfileOptions } from "../../src/vendors.ts";

const api = "https://api.github.com";
const EPOCH = Date.UTC(2026, 0, 1); // the simulator's virtual t = 0 (its default epochMs)

interface Sent {
  readonly resource: string;
  readonly at: number;
  readonly status: number;
}

/** A profile-driven client on a simulated GitHub, recording what reached the server and when. */
function setup(server: GitHubSimulatorOptions, profile: GitHubProfileOptions = {}) {
  const clock = new ManualClock();
  const simulated = createSimulatedFetch({ server: new GitHubSimulator(server), clock, latency: 20 });
  const sent: Sent[] = [];
  const recording = async (input: string | URL | Request, init?: RequestInit) => {
    const at = clock.now();
    const url = input instanceof Request ? input.url : String(input);
    const response = await simulated(input, init);
    sent.push({ resource: GitHubSimulator.resourceOf(new URL(url).pathname), at, status: response.status });
    return response;
  };
  const throttles: ThrottleEvent[] = [];
  const gh = createThrottledFetch({
    ...github({ clock, wallClock: () => EPOCH + clock.now(), ...profile }), fetch: recording, onThrottle: (e) => throttles.push(e),
  });
  const finished: { path: string; calledAt: number; at: number; status: number }[] = [];
  const call = async (path: string) => {
    const calledAt = clock.now();
    const response = await gh(`${api}${path}`);
    await response.text();
    finished.push({ path, calledAt, at: clock.now(), status: response.status });
  };
  return { clock, sent, call, finished, throttles };
}

/** Makes the calls at their virtual times (in order), plus a core call every `every` ms from 0 to `until`. */
async function traffic(clock: ManualClock, call: (path: string) => Promise<void>, until: number, every: number, extra: [number, string][] = []) {
  const plan: [number, string][] = [...extra];
  for (let t = 0, i = 0; t <= until; t += every, i++) plan.push([t, `/repos/o/r/issues/${i}`]);
  plan.sort((a, b) => a[0] - b[0]);
  const calls: Promise<void>[] = [];
  for (const [t, path] of plan) {
    await clock.advanceTo(t);
    calls.push(call(path));
  }
  return calls;
}

describe("github(): a primary refusal pauses only the resource it names, a secondary one every resource", () => {
  for (const primaryStatus of [403, 429] as const) {
    test(`search exhausted (primary, ${primaryStatus}): core keeps flowing; every search caller waits until the reset + 1 s`, async () => {
      // The server allows 5 searches a minute, the profile assumes 30: the 6th is refused.
      const { clock, sent, call, finished } = setup({ primaryStatus, resources: { search: { limit: 5, interval: 60_000 } } });
      const searches = Array.from({ length: 8 }, (_, i) => call(`/search/issues?q=${i}`));
      // Core every 2 s for 70 s; two more searches called during the pause.
      const more = await traffic(clock, call, 70_000, 2_000, [[10_000, "/search/issues?q=during"], [30_000, "/search/issues?q=later"]]);
      await clock.runAll();
      await Promise.all([...searches, ...more]);

      // The window opened at t = 0 and resets at 60 s (whole epoch seconds), + 1 s margin.
      const resume = 61_000;
      const refused = sent.filter((s) => s.status !== 200);
      expect(refused.every((s) => s.resource === "search" && s.at === 0)).toBe(true); // one burst, in flight together
      expect(refused).toHaveLength(3);
      // No search reached the server between the refusal and the reset; after it, every one did.
      const searchSends = sent.filter((s) => s.resource === "search" && s.status === 200).map((s) => s.at);
      expect(searchSends.filter((t) => t > 0 && t < resume)).toEqual([]);
      expect(searchSends.filter((t) => t >= resume)).toHaveLength(5); // 3 retried + 2 late callers
      // Core went on at its own pace throughout, answered within the latency.
      const coreDone = finished.filter((f) => f.path.startsWith("/repos/"));
      expect(coreDone).toHaveLength(36);
      expect(coreDone.every((f) => f.status === 200 && f.at - f.calledAt === 20)).toBe(true);
      expect(finished.every((f) => f.status === 200)).toBe(true);
    });
  }

  test("a secondary refusal on search (retry-after 30 s): every resource waits 30 s; the refused searches retry together", async () => {
    const { clock, sent, call, finished, throttles } = setup({
      secondaryLimit: ({ resource, now }) => (resource === "search" && now < 1_000 ? 30_000 : undefined),
    });
    const searches = Array.from({ length: 4 }, (_, i) => call(`/search/issues?q=${i}`));
    const core = await traffic(clock, call, 40_000, 1_000);
    await clock.runAll();
    await Promise.all([...searches, ...core]);

    const refused = sent.filter((s) => s.status === 403);
    expect(refused.map((s) => [s.resource, s.at])).toEqual([["search", 0], ["search", 0], ["search", 0], ["search", 0]]);
    // The refusals arrive at 20 ms and pause every resource until 30.02 s; the retries go then, together.
    const retried = sent.filter((s) => s.resource === "search" && s.status === 200).map((s) => s.at);
    expect(retried).toEqual([30_020, 30_020, 30_020, 30_020]);
    // A secondary limit is the account's: core sent nothing into it (only its call at 0, sent with the searches).
    const coreSent = sent.filter((s) => s.resource === "core").map((s) => s.at);
    expect(coreSent.filter((at) => at > 0 && at < 30_020)).toEqual([]);
    expect(coreSent.filter((at) => at === 30_020)).toHaveLength(30); // the callers of 1 s … 30 s, in their order
    const coreDone = finished.filter((f) => f.path.startsWith("/repos/"));
    expect(coreDone).toHaveLength(41);
    expect(coreDone.every((f) => f.status === 200)).toBe(true);
    // Four refusals, in flight together: one pause (each a server-timed retry), not four doublings.
    expect(throttles.every((t) => t.reason === "throttled" && t.key === "search")).toBe(true);
    expect(Math.max(...throttles.map((t) => t.delay))).toBe(30_000);
  });

  test("a secondary refusal whose wait is past maxRetryAfter is returned at once; every resource stays paused for it", async () => {
    const { clock, sent, call, finished } = setup(
      { secondaryLimit: ({ resource, now }) => (resource === "search" && now < 1_000 ? 120_000 : undefined) },
      { maxRetryAfter: 60_000 },
    );
    const first = call("/search/issues?q=a");
    await clock.advanceTo(5_000);
    const second = call("/search/issues?q=b"); // during the 120 s pause
    const core = call("/repos/o/r");
    await clock.runAll();
    await Promise.all([first, second, core]);
    expect(finished.find((f) => f.path.endsWith("q=a"))!.status).toBe(403);
    expect(finished.find((f) => f.path.endsWith("q=a"))!.at).toBe(20);
    expect(finished.find((f) => f.path === "/repos/o/r")!.at).toBe(120_040);
    expect(sent.filter((s) => s.resource === "search").map((s) => s.at)).toEqual([0, 120_020]);
  });
});

describe("github(): a resource the profile has no quota for (red-team: a refusal of code_scanning_upload paused core for an hour)", () => {
  /** GitHub answering uploads (`code_scanning_upload`) with its own primary quota used up until `resetIn` s; everything else is core. */
  function uploads(resetIn: number, refuse: (n: number) => boolean) {
    const clock = new ManualClock();
    const wall = () => EPOCH + clock.now();
    const seen: [number, string][] = [];
    let n = 0;
    const fetch = async (input: string | URL | Request) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      seen.push([clock.now(), url.pathname]);
      const upload = url.pathname.endsWith("/code-scanning/sarifs");
      const headers = {
        date: new Date(wall()).toUTCString(), "x-ratelimit-reset": String(Math.floor(wall() / 1000) + resetIn),
        "x-ratelimit-resource": upload ? "code_scanning_upload" : "core",
      };
      if (upload && refuse(n++)) {
        return new Response('{"message":"API rate limit exceeded"}', { status: 403, headers: { ...headers, "x-ratelimit-limit": "1000", "x-ratelimit-remaining": "0" } });
      }
      return new Response("{}", { status: 200, headers: { ...headers, "x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4000" } });
    };
    const gh = createThrottledFetch({ ...github({ clock, wallClock: wall }), fetch });
    const at = async (path: string, init?: RequestInit) => {
      const response = await gh(`${api}${path}`, init);
      await response.text();
      return { status: response.status, at: clock.now() };
    };
    return { clock, seen, at };
  }
  const upload = { method: "POST", body: "{}" };

  test("its refusal pauses that resource alone: core goes on; the refused path waits until the reset", async () => {
    const { clock, at } = uploads(3600, () => true);
    const first = at("/repos/o/r/code-scanning/sarifs", upload); // an hour's wait: past maxRetryAfter, returned
    await clock.runAll();
    expect(await first).toEqual({ status: 403, at: 0 });
    const core = at("/repos/o/r/issues");
    const again = at("/repos/o/r/code-scanning/sarifs", upload); // GitHub named its resource: it queues there
    await clock.runAll(3_600_000);
    expect(await core).toEqual({ status: 200, at: 0 });
    await clock.runAll();
    expect((await again).at).toBe(3_601_000);
  });

  test("resource names from the server are data: 'constructor', '__proto__' and 100 made-up names pause nothing else and break nothing", async () => {
    const clock = new ManualClock();
    const wall = () => EPOCH + clock.now();
    let n = 0;
    const names = ["constructor", "__proto__", "toString", "core:write", "odd:name", ...Array.from({ length: 100 }, (_, i) => `made_up_${i}`)];
    const fetch = async (input: string | URL | Request) => {
      const path = new URL(input instanceof Request ? input.url : String(input)).pathname;
      if (path.startsWith("/weird/")) {
        return new Response("{}", { status: 403, headers: { date: new Date(wall()).toUTCString(), "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(Math.floor(wall() / 1000) + 3600), "x-ratelimit-resource": names[n++ % names.length]! } });
      }
      return new Response("{}", { status: 200, headers: { "x-ratelimit-remaining": "4000", "x-ratelimit-resource": "core" } });
    };
    const gh = createThrottledFetch({ ...github({ clock, wallClock: wall }), fetch });
    for (let i = 0; i < names.length; i++) expect((await clock.runUntil(gh(`${api}/weird/${i}`))).status).toBe(403);
    const core = await clock.runUntil(gh(`${api}/repos/o/r`));
    expect([core.status, clock.now()]).toEqual([200, 0]);
  });

  test("a short reset: the refused call waits for it alone, retried once; core is not paused for it", async () => {
    const { clock, seen, at } = uploads(30, (n) => n === 0);
    const first = at("/repos/o/r/code-scanning/sarifs", upload);
    await clock.advance(10); // the refusal has been read
    const core = at("/repos/o/r/issues");
    await clock.runAll();
    expect(await core).toEqual({ status: 200, at: 10 });
    expect(await first).toEqual({ status: 200, at: 31_000 });
    expect(seen).toEqual([[0, "/repos/o/r/code-scanning/sarifs"], [10, "/repos/o/r/issues"], [31_000, "/repos/o/r/code-scanning/sarifs"]]);
  });
});
