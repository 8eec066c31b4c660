import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { experimental_getRunnerTask as runnerTask, type Reporter } from 'vitest/node';
import base from './vitest.config.js';

/**
 * The unit projects (shared, cli, server-unit) as the mutation run uses them (stryker.config.mjs).
 * The CLI and the server load `@hookrelay/shared` from its built dist, where a mutant of
 * packages/shared/src never shows; here the package and its subpath exports resolve to the sources.
 */
const sharedSources = fileURLToPath(new URL('./packages/shared/src/', import.meta.url));
const alias = [
  { find: /^@hookrelay\/shared$/u, replacement: `${sharedSources}index.ts` },
  { find: /^@hookrelay\/shared\/(client|ids|digest|glob|sockets)$/u, replacement: `${sharedSources}$1.ts` },
];

/**
 * The test files of each unit project that exercise the mutated modules. A mutant of a module-level
 * constant (a pattern of ids.ts, say) runs every test file that imports its module, and nearly every
 * file imports the shared package: limiting the run to these files keeps such a mutant to seconds.
 */
const UNIT_PROJECTS: Record<string, string[]> = {
  shared: ['test/**/*.test.ts'],
  'server-unit': ['test/unit/{delivery,listen-filter,ordered-id,samples,ssrf,ssrf-lookup,verify,verify-refusals}.test.ts'],
  cli: ['test/listen-{cursor-store,duration,forwarder,listener,project-file,routes}.test.ts'],
};
const projects = (base.test?.projects ?? []).flatMap((project) => {
  if (typeof project !== 'object' || typeof project === 'function' || !('test' in project)) return [];
  const name = project.test?.name;
  const include = typeof name === 'string' ? UNIT_PROJECTS[name] : undefined;
  if (include === undefined) return [];
  return [{ ...project, test: { ...project.test, include }, resolve: { alias } }];
});
if (projects.length !== Object.keys(UNIT_PROJECTS).length) throw new Error(`vitest.config.ts no longer has the projects ${Object.keys(UNIT_PROJECTS).join(', ')}`);

/**
 * A test file that cannot be imported holds no test, and Stryker's vitest runner scores a mutant only
 * by the tests it finds: a mutant that makes a module throw on import (a constant the module parses
 * at load) would count as survived although every test of that module fails. This reporter gives
 * such a file one failed test carrying the import error, so the mutant counts as killed.
 */
const unloadableFileFails: Reporter = {
  onTestRunEnd(testModules) {
    for (const testModule of testModules) {
      const file = runnerTask(testModule);
      if (file.result?.state !== 'fail' || file.tasks.length > 0) continue;
      // Stryker reads a test's name, file, mode and result; nothing runs it again.
      file.tasks.push({
        type: 'test',
        id: `${file.id}_import`,
        name: 'imports its modules',
        fullName: `${file.name} imports its modules`,
        fullTestName: 'imports its modules',
        mode: 'run',
        file,
        suite: file,
        meta: {},
        annotations: [],
        artifacts: [],
        timeout: 0,
        result: { state: 'fail', errors: file.result.errors ?? [] },
        context: undefined as never,
      });
    }
  },
};

export default defineConfig({ test: { ...base.test, projects, reporters: ['default', unloadableFileFails] } });
