/** Reading and writing the project's JSON manifests, keeping their formatting (2 spaces, final newline). */
import { readFileSync, writeFileSync } from "node:fs";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export function readJson(path: string): JsonObject {
  return JSON.parse(readFileSync(path, "utf8")) as JsonObject;
}

export function writeJson(path: string, value: Json): void {
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
}

/** Structural equality, order of object keys included (so a rewrite would produce the same file). */
export function sameJson(a: Json | undefined, b: Json | undefined): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
