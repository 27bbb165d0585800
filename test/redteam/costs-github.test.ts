/**
 * Red-team findings against github() (src/vendors/github-profile.ts), now regression tests:
 * (1) the secondary backoff doubles (60, 120, 240 s) even while successful reads go on — a success
 * does not end the episode, only a quiet spell as long as its last wait does; (2) resets are read
 * against the profile's `wallClock` (passed on to the fetch), not the machine's Date.now; (3) a
 * secondary limit is the account's, so every caller of every resource waits (octokit
 * plugin-throttling#629: requests sent into a secondary limit draw more refusals).
 */
import { describe, expect, test } from "vitest";
import { createThrottledFetch, ManualClock } from "../../src/index.ts";
import { anthropic, github, openai } from "../../src/vendors.ts";

const json = { "content-type": "application/json" };

function when<T>(clock: ManualClock, p: Promise<T>): { at?: number; value?: T; error?: unknown } {
  const o: { at?: number; value?: T; error?: unknown } = {};
  p.then((v) => { o.at = clock.now(); o.value = v; }, (e: unknown) => { o.at = clock.now(); o.error = e; });
  return o;
}

describe("red team vendors : github() secondary backoff escalation", () => {
  const GH = "https://api.github.com";
  const epoch = Date.UTC(2026, 0, 1);
  async function run(withRead: boolean): Promise<number[]> {
    const clock = new ManualClock();
    const date = () => new Date(epoch + clock.now()).toUTCString();
    const writes: number[] = [];
    let refuse = 3;
    const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
      const request = new Request(input, init);
      if (request.method === "POST") {
        writes.push(clock.now());
        if (refuse-- > 0) {
          return new Response(JSON.stringify({ message: "You have exceeded a secondary rate limit." }), { status: 403, headers: { ...json, date: date(), "x-ratelimit-remaining": "4000", "x-ratelimit-resource": "core" } });
        }
      }
      return new Response("{}", { status: 200, headers: { ...json, date: date(), "x-ratelimit-remaining": "3999", "x-ratelimit-resource": "core" } });
    }) as typeof globalThis.fetch;
    const profile = github({ clock, maxRetryAfter: 3_600_000, wallClock: () => epoch + clock.now() });
    const gh = createThrottledFetch({ ...profile, fetch, retry: { ...profile.retry, limit: 5, maxRetryAfter: 3_600_000 } });
    const post = when(clock, gh(`${GH}/repos/o/r/issues`, { method: "POST", body: "{}", headers: json }));
    // A reader polling every 10 s meanwhile (each read is its own call).
    if (withRead) for (let t = 10_000; t < 1_000_000; t += 10_000) clock.setTimeout(() => void gh(`${GH}/repos/o/r`).then((r) => r.text()), t);
    await clock.advance(1_000_000);
    expect((post.value as Response | undefined)?.status).toBe(200);
    return writes.map((t, i) => (i === 0 ? t : t - writes[i - 1]!));
  }

  test("github(): refused writes retry after 60, 120, 240 s even while successful reads go on (a success does not end the secondary episode)", async () => {
    const gaps = await run(true);
    expect(gaps[2]).toBeGreaterThanOrEqual(120_000);
    expect(gaps[3]).toBeGreaterThanOrEqual(240_000);
  });
});

describe("red team vendors : github() and the fetch's wallClock", () => {
  test("a primary 403 read without a Date header is timed against the profile's wallClock (a virtual epoch), not the machine's Date.now", async () => {
    const clock = new ManualClock();
    const epoch = Date.UTC(2026, 0, 1); // the virtual epoch of the test; the machine's clock is elsewhere
    const log: number[] = [];
    const fetch = (async () => {
      log.push(clock.now());
      if (log.length === 1) {
        return new Response(JSON.stringify({ message: "API rate limit exceeded" }), {
          status: 403,
          headers: { ...json, "x-ratelimit-remaining": "0", "x-ratelimit-reset": String((epoch + 30_000) / 1000), "x-ratelimit-resource": "core" },
        });
      }
      return new Response("{}", { status: 200, headers: json });
    }) as typeof globalThis.fetch;
    const gh = createThrottledFetch({ ...github({ clock, wallClock: () => epoch + clock.now() }), fetch });
    const r = when(clock, gh("https://api.github.com/repos/o/r"));
    await clock.advance(120_000);
    expect((r.value as Response).status).toBe(200);
    expect(log[1]).toBe(31_000); // reset (30 s after the wallClock's now) + 1 s
  });

  test("wallClock is validated and passed on to the fetch by every profile", () => {
    const wallClock = () => 0;
    type Make = (o: object) => { wallClock?: () => number };
    const makers: Array<[Make, object]> = [[github as Make, {}], [openai as unknown as Make, { rpm: 60, tpm: 1000 }], [anthropic as unknown as Make, { rpm: 60, inputTpm: 1000, outputTpm: 1000 }]];
    for (const [make, base] of makers) {
      expect(make({ ...base, wallClock }).wallClock).toBe(wallClock);
      expect(make(base).wallClock).toBeUndefined();
      expect(() => make({ ...base, wallClock: 5 })).toThrow(TypeError);
      expect(() => make({ ...base, wallClock: 5 })).toThrow(/`wallClock` must be a function, got 5/);
    }
  });
});

describe("red team vendors : github() secondary limit scope", () => {
  const GH = "https://api.github.com";
  const epoch = Date.UTC(2026, 0, 1);
  const date = (clock: ManualClock) => new Date(epoch + clock.now()).toUTCString();
  test("secondary 403 without retry-after: every caller (any resource) waits ≥ 60 s (doubling: see the escalation tests below)", async () => {
    const clock = new ManualClock();
    const log: Array<[number, string]> = [];
    let refuse = 2;
    const fetch = (async (input: RequestInfo | URL) => {
      const url = new URL(String(input instanceof Request ? input.url : input));
      log.push([clock.now(), url.pathname]);
      if (url.pathname.startsWith("/repos") && refuse > 0) {
        refuse--;
        return new Response(JSON.stringify({ message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again." }), { status: 403, headers: { ...json, date: date(clock), "x-ratelimit-remaining": "4000", "x-ratelimit-resource": "core" } });
      }
      return new Response("{}", { status: 200, headers: { ...json, date: date(clock), "x-ratelimit-remaining": "3999", "x-ratelimit-resource": "core" } });
    }) as typeof globalThis.fetch;
    const gh = createThrottledFetch({ ...github({ clock, wallClock: () => epoch + clock.now() }), fetch });
    const first = when(clock, gh(`${GH}/repos/o/r`));
    await clock.advanceTo(5);
    const search = when(clock, gh(`${GH}/search/issues?q=x`));
    await clock.advance(600_000);
    expect((first.value as Response).status).toBe(200);
    const repoTimes = log.filter(([, p]) => p === "/repos/o/r").map(([t]) => t);
    expect(repoTimes[1]! - repoTimes[0]!).toBeGreaterThanOrEqual(60_000);
    expect(search.at).toBeGreaterThanOrEqual(60_000); // all callers pause together
  });

});
