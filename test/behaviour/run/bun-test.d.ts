// The part of `bun:test` that run/bun.ts uses, so the project's type check needs no Bun types.
declare module "bun:test" {
  export function test(name: string, fn: () => void | Promise<void>, timeout?: number): void;
}
