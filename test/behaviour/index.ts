/**
 * The behavioural suite: importing this module registers every case. Add a case file here and every
 * runtime runs it.
 *
 * @module
 */
import "./window.cases.ts";
import "./smooth.cases.ts";
import "./fixed-sliding.cases.ts";
import "./combine.cases.ts";
import "./reserve.cases.ts";
import "./priority-stats.cases.ts";
import "./waiting.cases.ts";
import "./api.cases.ts";
import "./fetch.cases.ts";
import "./serve.cases.ts";
import "./throttled-fetch.cases.ts";
import "./testing-msw.cases.ts";
import "./simulated.cases.ts";

export { cases, fullName, runCase } from "./harness.ts";
