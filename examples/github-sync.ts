/**
 * A sync job through `github()` against the simulated GitHub API, in virtual time: 300 issue reads,
 * 40 searches and 120 comments, on an account whose content-creating limit (20 a minute here) is
 * below the documented 80 the profile assumes — so the secondary limit is hit on purpose. Every
 * caller of the refused resource (core) pauses on the refusal (nothing is sent to it until its
 * retry-after runs out; searches go on), the refused calls are retried in their place, and every
 * call succeeds: no 403 storm.
 *
 *   node examples/github-sync.ts
 *
 * In your project: `import { github } from "sluice/vendors"` and leave out `clock` and `fetch`:
 *
 *   const gh = createThrottledFetch({ ...github() });
 */
import { runGitHubSync } from "./support/github-sync.ts";

const r = await runGitHubSync();
console.log(`calls ${r.calls}, ok ${r.ok}, secondary 403s ${r.secondary403}, sent to a paused resource ${r.sentDuringPause}, ` +
  `to other resources meanwhile ${r.othersSentDuringPause}, ` +
  `most in flight ${r.maxInFlight}, ${(r.durationMs / 60_000).toFixed(1)} virtual min`);
console.log("done: github-sync");
