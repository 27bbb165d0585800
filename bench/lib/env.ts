/**
 * What the figures were measured on, for the head of RESULTS.md.
 *
 * @module
 */
import { availableParallelism, cpus, loadavg, release, totalmem, type } from "node:os";

export interface Environment {
  date: string;
  cores: number;
  cpu: string;
  memoryGiB: number;
  os: string;
  node: string;
  v8: string;
  load: string;
}

export function environment(): Environment {
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    cores: availableParallelism(),
    cpu: cpus()[0]?.model.trim() ?? "unknown",
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: `${type()} ${release()}`,
    node: process.version,
    v8: process.versions.v8,
    load: loadavg().map((l) => l.toFixed(2)).join(" / "),
  };
}
