import { defineConfig } from 'vitest/config';

/**
 * Test projects. The server's API and database tests run twice, once on a throwaway PostgreSQL
 * cluster and once on PGlite; tests of several processes (test/multi) run on PostgreSQL only.
 */
const exclude = ['**/node_modules/**', '**/dist/**'];
/**
 * e2e files without timing-sensitive faults (see the e2e projects below): every server, dev process,
 * app and config dir in them is their own, on ports the system chose.
 */
const E2E_PARALLEL = ['listen.test.ts', 'server-backup.test.ts', 'big-bodies.test.ts', 'listen-large-bodies.test.ts', 'rejections.test.ts', 'cli-dev.test.ts', 'cli-dev-second-terminal.test.ts', 'cli-dev-tunnel.test.ts', 'cli-dev-verify.test.ts', 'cli-endpoints.test.ts', 'cli-wrong-server.test.ts', 'cli-open.test.ts', 'cli-wait.test.ts', 'cli-inbound.test.ts', 'cli-messages.test.ts', 'cli-events.test.ts', 'cli-bulk-jobs.test.ts', 'cli-pull.test.ts', 'cli-completion.test.ts', 'listen-routes.test.ts', 'listen-resign.test.ts', 'server-bundle.test.ts', 'server-start.test.ts', 'cli-terminal.test.ts', 'cli-mcp.test.ts', 'cli-bulk-terminal.test.ts', 'portal-expiry.test.ts'];
/** Every server test file runs under the prototype guard: no test may leave a built-in prototype changed. */
const serverShared = { root: 'packages/server', exclude, testTimeout: 30_000, hookTimeout: 120_000, setupFiles: ['test/setup/prototype-guard.ts'] };

export default defineConfig({
  test: {
    // Each PGlite instance holds a few hundred MB and the CI machine has 2 cores.
    maxWorkers: 2,
    projects: [
      { test: { name: 'shared', root: 'packages/shared', include: ['test/**/*.test.ts'], exclude } },
      { test: { name: 'cli', root: 'packages/cli', include: ['test/**/*.test.ts'], exclude } },
      // The inspector's parts that run without a browser (ui/test) are unit tests of the server package.
      { test: { name: 'server-unit', ...serverShared, include: ['test/unit/**/*.test.ts', 'ui/test/**/*.test.ts'] } },
      {
        test: {
          name: 'server-postgres',
          ...serverShared,
          include: ['test/api/**/*.test.ts', 'test/db/**/*.test.ts', 'test/multi/**/*.test.ts'],
          globalSetup: ['test/setup/postgres.ts'],
        },
      },
      {
        test: {
          name: 'server-pglite',
          ...serverShared,
          include: ['test/api/**/*.test.ts', 'test/db/**/*.test.ts'],
          globalSetup: ['test/setup/pglite.ts'],
        },
      },
      {
        // Black-box tests of the CLI's commands: each file has its own server and config dir, and
        // nothing in them depends on timing, so two files run at once.
        test: {
          name: 'e2e',
          root: 'e2e',
          include: E2E_PARALLEL,
          exclude,
          // Their time goes mostly to processes they start and wait for: a third file keeps both cores busy.
          maxWorkers: 3,
          testTimeout: 60_000,
          hookTimeout: 120_000,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: 'e2e-serial',
          root: 'e2e',
          include: ['**/*.test.ts'],
          exclude: [...exclude, ...E2E_PARALLEL],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          // Real processes with timing-sensitive faults, and a browser: one file at a time, last.
          fileParallelism: false,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
