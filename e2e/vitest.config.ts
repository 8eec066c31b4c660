import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    name: 'e2e',
    include: ['*.test.ts'],
    exclude: ['dist/**', 'node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Each file starts its own server; PGlite's first start peaks near 1 GB, so one file at a time.
    fileParallelism: false,
  },
});
