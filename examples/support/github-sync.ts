/**
 * A sync job against a simulated GitHub: reads issues (core), searches (search), and posts comments
 * (content-creating) — with the account's content-creating limit set *below* what the profile
 * assumes, so the secondary limit is hit on purpose. What `examples/github-sync.ts`, the tests and
 * `bench/vendors.ts` measure: every caller of the refused resource pauses on a secondary refusal (no
 * request of that resource is sent while the pause lasts; the other resources go on), so refusals
 * come in one short burst per pause, not a storm.
 */
import { createThrottledFetch } from "../../src/index.ts";
import { createSimulatedFetch, GitHubSimulator, ManualClock } from "../../src/testing.ts";
import { github } from "../../src/vendors.ts";
import { runVirtually } from "./virtual-run.ts";

export interface SyncOptions {
  /** Issues read (GET, core). @default 300 */
  readonly reads?: number;
  /** Comments posted (POST, content-creating). @default 120 */
  readonly comments?: number;
  /** Searches (search resource). @default 40 */
  readonly searches?: number;
  /** The account's content-creating limit per minute (GitHub documents 80; the profile assumes 80). @default 20 */
  readonly serverWritesPerMinute?: number;
}

export interface SyncResult {
  readonly calls: number;
  /** Calls that ended 2xx. */
  readonly ok: number;
  /** Secondary-limit refusals (403) the server answered. */
  readonly secondary403: number;
  /** Requests of the refused resource sent while its secondary pause was in force (after the refusal arrived, before its retry-after ran out). */
  readonly sentDuringPause: number;
  /** Requests of *other* resources sent during those pauses (they are not held back). */
  readonly othersSentDuringPause: number;
  /** The most requests in flight at once, at the server. */
  readonly maxInFlight: number;
  /** Virtual ms from the first call to the last response. */
  readonly durationMs: number;
}

export async function runGitHubSync(options: SyncOptions = {}): Promise<SyncResult> {
  const reads = options.reads ?? 300;
  const comments = options.comments ?? 120;
  const searches = options.searches ?? 40;
  const clock = new ManualClock();
  const server = new GitHubSimulator({ contentCreation: { perMinute: options.serverWritesPerMinute ?? 20, perHour: 500 } });
  const simulated = createSimulatedFetch({ server, clock, latency: { min: 50, max: 400 } });
  // Record when each request left and when each refusal came back, to check the pauses.
  const sent: { at: number; resource: string }[] = [];
  const pauses: { from: number; until: number; resource: string }[] = [];
  const recording = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = input instanceof Request ? input.url : String(input);
    sent.push({ at: clock.now(), resource: GitHubSimulator.resourceOf(new URL(url).pathname) });
    const response = await simulated(input, init);
    const retryAfter = Number(response.headers.get("retry-after") ?? "NaN");
    if (response.status === 403 && Number.isFinite(retryAfter)) {
      pauses.push({ from: clock.now(), until: clock.now() + retryAfter * 1000, resource: response.headers.get("x-ratelimit-resource")! });
    }
    return response;
  };
  const gh = createThrottledFetch({ ...github({ clock }), fetch: recording });

  const api = "https://api.github.com";
  let ok = 0;
  let last = 0;
  const call = async (path: string, init?: RequestInit) => {
    const response = await gh(`${api}${path}`, init);
    await response.text();
    last = Math.max(last, clock.now());
    if (response.status >= 200 && response.status < 300) ok++;
  };
  const calls = [
    ...Array.from({ length: reads }, (_, i) => call(`/repos/acme/app/issues/${i + 1}`)),
    ...Array.from({ length: searches }, (_, i) => call(`/search/issues?q=label:bug+page:${i}`)),
    ...Array.from({ length: comments }, (_, i) =>
      call(`/repos/acme/app/issues/${i + 1}/comments`, { method: "POST", body: JSON.stringify({ body: "synced" }) })),
  ];
  await runVirtually(clock, Promise.all(calls));
  return {
    calls: calls.length,
    ok,
    secondary403: pauses.length,
    sentDuringPause: sent.filter((s) => pauses.some((p) => s.resource === p.resource && s.at > p.from && s.at < p.until)).length,
    othersSentDuringPause: sent.filter((s) => pauses.some((p) => s.resource !== p.resource && s.at > p.from && s.at < p.until)).length,
    maxInFlight: simulated.stats.maxInFlight,
    durationMs: last,
  };
}
