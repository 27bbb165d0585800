// The part of `bun:test` that run/bun.ts uses, so the project's type check needs no Bun types.
declare module "bun:test" {
  type TestFn = (name: string, fn: () => void | Promise<void>, timeout?: number) => void;
  export const test: TestFn & { skip: TestFn };
}
