// @ts-check
import { readFileSync } from 'node:fs';
import ts from 'typescript';

/**
 * Mutation testing (`pnpm test:mutation`, scripts/test-mutation.mjs) of the modules where a security
 * or ordering decision lives, against the unit projects (vitest.mutation.config.ts). Each module has
 * its own bar: the run fails when a module's score, or that of one of its named parts, is below it.
 * `functions` limits a module, or one of its parts, to the named top-level functions.
 *
 * @typedef {{ name: string, functions: string[], bar: number }} ModulePart
 * @typedef {{ file: string, bar: number, functions?: string[], parts?: ModulePart[] }} MutationModule
 * @type {MutationModule[]}
 */
export const MODULES = [
  { file: 'packages/server/src/ingest/verify.ts', bar: 90 },
  {
    file: 'packages/server/src/security/ssrf.ts',
    bar: 85,
    parts: [{ name: 'blocking and lookup', functions: ['isBlockedAddress', 'isBlockedAddressError', 'createGuardedLookup'], bar: 90 }],
  },
  { file: 'packages/shared/src/signing.ts', bar: 85 },
  { file: 'packages/shared/src/samples.ts', functions: ['sampleEditPathProblem', 'applySampleEdits', 'parseSampleEdit'], bar: 85 },
  { file: 'packages/shared/src/glob.ts', bar: 85 },
  { file: 'packages/shared/src/ids.ts', bar: 85 },
  { file: 'packages/server/src/ingest/ordered-id.ts', bar: 85 },
  { file: 'packages/cli/src/listen/routes.ts', bar: 85 },
  { file: 'packages/cli/src/listen/project-file.ts', bar: 85 },
  { file: 'packages/cli/src/listen/cursor-store.ts', bar: 85 },
  { file: 'packages/server/src/stream/listen-filter.ts', bar: 85 },
];

/** The 1-based first and last lines of each named top-level function (or `const name = (…) => …`) of `file`. */
export function functionLines(file, names) {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found = new Map();
  for (const statement of source.statements) {
    const named = ts.isFunctionDeclaration(statement) && statement.name !== undefined ? [statement.name.text] : ts.isVariableStatement(statement) ? statement.declarationList.declarations.map((d) => d.name.getText(source)) : [];
    for (const name of named) {
      const line = (position) => source.getLineAndCharacterOfPosition(position).line + 1;
      found.set(name, [line(statement.getStart(source)), line(statement.getEnd())]);
    }
  }
  return names.map((name) => {
    const lines = found.get(name);
    if (lines === undefined) throw new Error(`${file} has no top-level function ${name}`);
    return /** @type {[number, number]} */ (lines);
  });
}

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner'],
  vitest: { configFile: 'vitest.mutation.config.ts' },
  coverageAnalysis: 'perTest',
  mutate: MODULES.flatMap(({ file, functions }) => (functions === undefined ? [file] : functionLines(file, functions).map(([from, to]) => `${file}:${from}-${to}`))),
  // The machine has 2 cores; each worker runs one vitest thread.
  concurrency: 2,
  reporters: ['progress', 'clear-text', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true, reportMutants: true },
  // Per-module bars are checked by scripts/test-mutation.mjs; Stryker's own bar is for the whole run.
  thresholds: { high: 90, low: 85, break: null },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
