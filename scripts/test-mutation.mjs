#!/usr/bin/env node
// @ts-check
/**
 * `pnpm test:mutation [stryker options]`: runs Stryker (stryker.config.mjs) and then holds each module
 * of its report to the module's bar. Exits 1 when Stryker fails or a module or part scores below
 * its bar. Extra arguments go to `stryker run`; `--mutate packages/shared/src/glob.ts` runs one
 * module, and only the modules in the report are judged. `--check-only` judges the last report again.
 *
 * A module's score is (killed + timed out) / (killed + timed out + survived + not covered), as
 * Stryker counts it; mutants that do not compile or that crash the runner count for neither side.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import config, { functionLines, MODULES } from '../stryker.config.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);

const args = process.argv.slice(2);
const checkOnly = args.includes('--check-only');
if (!checkOnly) {
  const stryker = spawnSync(process.execPath, [join(root, 'node_modules/@stryker-mutator/core/bin/stryker.js'), 'run', 'stryker.config.mjs', ...args], { stdio: 'inherit' });
  if (stryker.status !== 0) {
    console.error(`stryker exited with ${stryker.status ?? stryker.signal}`);
    process.exit(1);
  }
}

const reportFile = config.jsonReporter?.fileName ?? 'reports/mutation/mutation.json';
if (!existsSync(reportFile)) {
  console.error(`no report at ${reportFile}`);
  process.exit(1);
}
/** @type {{ files: Record<string, { mutants: { status: string, location: { start: { line: number } } }[] }> }} */
const report = JSON.parse(readFileSync(reportFile, 'utf8'));

const DETECTED = new Set(['Killed', 'Timeout']);
const UNDETECTED = new Set(['Survived', 'NoCoverage']);

/** @param {{ status: string }[]} mutants */
function score(mutants) {
  const detected = mutants.filter((m) => DETECTED.has(m.status)).length;
  const valid = detected + mutants.filter((m) => UNDETECTED.has(m.status)).length;
  return { detected, valid, percent: valid === 0 ? 100 : (100 * detected) / valid };
}

/**
 * @param {string} file
 * @param {{ location: { start: { line: number } } }[]} mutants
 * @param {string[] | undefined} functions
 */
function within(file, mutants, functions) {
  if (functions === undefined) return mutants;
  const ranges = functionLines(file, functions);
  return mutants.filter((m) => ranges.some(([from, to]) => m.location.start.line >= from && m.location.start.line <= to));
}

const rows = [];
let failed = false;
let judged = 0;
for (const module of MODULES) {
  const entry = report.files[module.file];
  if (entry === undefined) continue;
  judged++;
  const targets = [{ name: module.file, functions: module.functions, bar: module.bar }, ...(module.parts ?? []).map((part) => ({ ...part, name: `  ${module.file}: ${part.name}` }))];
  for (const target of targets) {
    const result = score(within(module.file, entry.mutants, target.functions));
    const ok = result.percent >= target.bar;
    if (!ok) failed = true;
    rows.push([target.name, `${result.percent.toFixed(1)} %`, `${result.detected}/${result.valid}`, `≥ ${target.bar} %`, ok ? 'ok' : 'BELOW']);
  }
}
if (judged === 0) {
  console.error(`${reportFile} holds none of the modules of stryker.config.mjs`);
  process.exit(1);
}
const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
console.log('\nmutation score by module (detected/valid mutants):');
for (const row of rows) console.log(row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join('  '));
if (failed) {
  console.error('\nmutation testing: a module scores below its bar (survivors in reports/mutation/index.html)');
  process.exit(1);
}
