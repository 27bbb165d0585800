import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Property tests run many virtual-time cases; give slow CI machines room without hiding hangs.
    testTimeout: 30_000,
  },
});
