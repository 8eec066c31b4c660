import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    name: 'e2e',
    include: ['*.test.ts'],
    exclude: ['dist/**', 'node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Each file starts its own server processes, with timing-sensitive faults: one file at a time.
    fileParallelism: false,
  },
});
