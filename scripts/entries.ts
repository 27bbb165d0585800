/**
 * The package's entry points, in one list. Everything that must agree about them is derived from it:
 * the tsup build (`tsup.config.ts`), the `exports`/`main`/`types`/`typesVersions` fields of
 * package.json and the `exports` of deno.json (`npm run sync:manifests` writes them; the package
 * check fails when they drift), the packed-tarball smoke test, the size budget, `deno doc --lint`,
 * and the web-standard API test.
 *
 * Adding an entry point is one line here, then `npm run sync:manifests`:
 *
 * ```ts
 * { subpath: "./redis", source: "src/redis.ts", runtime: "node", peers: ["ioredis"] },
 * ```
 *
 * @module
 */

/** One public entry point, published under the same subpath on npm and JSR. */
export interface EntryPoint {
  /** The subpath users import: `"."` is `sluice` / `jsr:@sluice/sluice`; `"./testing"` is `sluice/testing`. */
  readonly subpath: "." | `./${string}`;
  /** The TypeScript module that tsup builds for npm, and JSR publishes (unless `jsr` says otherwise). */
  readonly source: `src/${string}.ts`;
  /** The module deno.json exports for this subpath, when it differs from `source` (the root has `mod.ts`). */
  readonly jsr?: `./${string}.ts`;
  /**
   * `"web"`: only web-standard APIs (a test enforces it), so it runs on Node, Deno, Bun and browsers.
   * `"node"`: may import `node:` modules or Node-only libraries (an undici or Redis adapter).
   */
  readonly runtime: "web" | "node";
  /** Libraries this entry adapts: they must be optional peer dependencies in package.json. */
  readonly peers?: readonly string[];
  /** Minified + gzipped budget in bytes for this entry with everything it imports (fails the size check). */
  readonly sizeBudget?: number;
}

export const ENTRIES: readonly EntryPoint[] = [
  // The main entry holds the limiters and the throttled fetch (27.7 KiB of its 29.2 for a fetch user,
  // 2026-11-23); the limiter core alone has its own, tighter budget in scripts/lib/size.ts. Budgets below
  // are the size measured on 2026-11-23 plus about 3 % (1 % here), so growth is caught; raised on
  // 2026-11-27 evening by the red-team fixes (async hooks, a fetch that ignores its signal, seeded
  // jitter, ManualClock.hold, option checks): every entry 0.2–0.4 KiB.
  { subpath: ".", source: "src/index.ts", jsr: "./mod.ts", runtime: "web", sizeBudget: 36.5 * 1024 },
  // ManualClock alone is under 1 KiB (tree-shaken); with every simulated server and vendor simulator, 8.5 KiB;
  // 10.5 KiB on 2026-11-27 (option checks of the simulators, ManualClock.hold).
  { subpath: "./testing", source: "src/testing.ts", runtime: "web", sizeBudget: 10.9 * 1024 },
  // msw handlers for the simulated servers: msw's `http` is passed in (nothing imported from msw, an optional
  // peer). With the simulated fetch and the three vendor simulators it reaches: 7.8 KiB (2026-11-23); a user
  // of it imports most of that from `./testing` anyway.
  { subpath: "./testing/msw", source: "src/testing-msw.ts", runtime: "web", peers: ["msw"], sizeBudget: 9.4 * 1024 },
  // With what it imports (the header parsers, the gate, the limiters, KeyedLimiter, adaptive rates): 22.9 KiB
  // (2026-11-23); a user of it imports most of that from the main entry anyway, for the limiter. 25.6 KiB
  // on 2026-11-27 after the red-team fixes (adaptive options, the slot idle timer from the headers);
  // 27.2 later that day, with GatedLimiter and KeyedLimiter exported as values (the types said so).
  { subpath: "./undici", source: "src/undici.ts", runtime: "node", peers: ["undici"], sizeBudget: 28.1 * 1024 },
  // The profiles with their building blocks (header readers, estimators, the SSE tap) and the limiters they
  // build (window, combination, concurrency, keyed): 20.0 KiB (2026-11-23; 16.5 before the fetch-reserve
  // merge: the limiters grew); a user imports most of that from the main entry anyway.
  // 23.8 KiB on 2026-11-27 (tryAcquire ahead of lower-priority waiters, limiter fixes).
  { subpath: "./vendors", source: "src/vendors.ts", runtime: "web", sizeBudget: 24.5 * 1024 },
  // The Redis store and its adapters, with the limiters they back: 24.2 KiB (2026-11-23); 28.9 KiB on
  // 2026-11-27 with GatedLimiter, LimiterEvents, Reservation and SluiceError exported as values (the
  // types said so); 29.5 KiB that evening (pauses held through outages, local-share callers handed
  // back to Redis).
  { subpath: "./redis", source: "src/redis.ts", runtime: "node", peers: ["ioredis", "redis"], sizeBudget: 30.1 * 1024 },
  // Web: the OpenTelemetry API runs in browsers, Deno and Bun too, and this entry imports nothing
  // (the Meter is typed structurally), so its code is held to the web-standard check. 2.9 KiB with
  // what it imports (argument checks); most of it is the metric names and descriptions.
  { subpath: "./otel", source: "src/otel.ts", runtime: "web", peers: ["@opentelemetry/api"], sizeBudget: 3.4 * 1024 },
];

/** The base name of an entry's built files in dist/: `"."` → `index`, `"./testing"` → `testing`. */
export function distName(entry: EntryPoint): string {
  return entry.subpath === "." ? "index" : entry.subpath.slice(2).replaceAll("/", "-");
}

/** The module deno.json exports for an entry. */
export function jsrModule(entry: EntryPoint): string {
  return entry.jsr ?? `./${entry.source}`;
}

/** The specifier a user writes to import an entry from the npm package. */
export function npmSpecifier(packageName: string, entry: EntryPoint): string {
  return entry.subpath === "." ? packageName : `${packageName}/${entry.subpath.slice(2)}`;
}
