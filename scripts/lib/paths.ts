/** Paths every script agrees on. */
import { fileURLToPath } from "node:url";
import { join } from "node:path";

/** The repository root. */
export const ROOT: string = fileURLToPath(new URL("../..", import.meta.url));
/** Scratch space for builds and results; git-ignored, wiped by nobody but its users. */
export const TMP: string = join(ROOT, ".tmp");
/** Where each test step leaves its counts, read by `scripts/test-all.ts`. */
export const RESULTS: string = join(TMP, "results");
/** The tsup output. */
export const DIST: string = join(ROOT, "dist");
