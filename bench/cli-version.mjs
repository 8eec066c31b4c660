#!/usr/bin/env node
// CLI start-up benchmark: wall time of `node packages/cli/bin/run.js --version`, the
// whole process from spawn to exit, as a user's shell sees it. Target: p50 ≤ 300 ms.
//
//   pnpm bench:cli-version [--runs 20] [--warmup 2] [--compare] [--enforce] [--no-build]
//
// Builds packages/shared and packages/cli first (tsc -b, incremental) unless --no-build. The
// warm-up runs also let bin/run.js rebuild oclif's command manifest when the build changed it
// (packages/cli/src/manifest-cache.ts); the first of them is reported on its own.
// --compare also measures, the same way: `node -e 0` (Node's own start-up) and the CLI started
// without a manifest (oclif then imports every command module), the state before the manifest.
// Exit code 1 when a run fails or prints something else than the version; with --enforce also
// when p50 is over the target.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const TARGET_MS = 300;
const root = fileURLToPath(new URL('..', import.meta.url));
const cliRoot = path.join(root, 'packages', 'cli');
const bin = path.join(cliRoot, 'bin', 'run.js');
const manifest = path.join(cliRoot, 'oclif.manifest.json');
const VERSION_LINE = /^@hookrelay\/cli\/\d+\.\d+\.\d+ \S+ node-v\S+\n$/u;

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '2' },
    compare: { type: 'boolean', default: false },
    enforce: { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  const text = readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1, 14);
  process.stdout.write(`${text.map((line) => line.replace(/^\/\/ ?/u, '')).join('\n')}\n`);
  process.exit(0);
}
const runs = Number(args.runs);
const warmup = Number(args.warmup);
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(warmup) || warmup < 0) {
  process.stderr.write('--runs must be an integer ≥ 1 and --warmup an integer ≥ 0\n');
  process.exit(2);
}

/** Nothing of the caller's HOOKRELAY_* or NODE_OPTIONS: the CLI as a fresh shell starts it. */
const childEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? os.homedir(), NO_COLOR: '1' };

function fail(message) {
  process.stderr.write(`cli-version: ${message}\n`);
  process.exit(1);
}

/** One run: wall milliseconds from spawn to exit. */
function timeRun(argv, check) {
  const started = process.hrtime.bigint();
  const result = spawnSync(process.execPath, argv, { cwd: root, env: childEnv, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== 0) fail(`${argv.join(' ')} exited ${result.status}: ${result.stderr}`);
  if (check && !VERSION_LINE.test(result.stdout)) fail(`unexpected output ${JSON.stringify(result.stdout)} (stderr ${JSON.stringify(result.stderr)})`);
  return ms;
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function measure(label, argv, check) {
  for (let i = 0; i < warmup; i += 1) timeRun(argv, check);
  const times = [];
  for (let i = 0; i < runs; i += 1) times.push(timeRun(argv, check));
  const sorted = [...times].sort((a, b) => a - b);
  const stats = {
    label,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    min: sorted[0],
    max: sorted[sorted.length - 1],
    mean: times.reduce((sum, t) => sum + t, 0) / times.length,
  };
  const f = (ms) => ms.toFixed(0).padStart(5);
  process.stdout.write(`${label.padEnd(44)} p50 ${f(stats.p50)} ms  p90 ${f(stats.p90)} ms  max ${f(stats.max)} ms  min ${f(stats.min)} ms  (${runs} runs)\n`);
  return stats;
}

if (!args['no-build']) {
  const tsc = createRequire(path.join(root, 'package.json')).resolve('typescript/bin/tsc');
  const build = spawnSync(process.execPath, [tsc, '-b', 'packages/shared', 'packages/cli'], { cwd: root, stdio: 'inherit' });
  if (build.status !== 0) fail('the build failed');
}
if (!existsSync(path.join(cliRoot, 'dist', 'manifest-cache.js'))) fail('packages/cli is not built (npx tsc -b packages/cli)');

const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
process.stdout.write(
  `machine: ${os.cpus().length} cores, ${cpu}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}\n`,
);
process.stdout.write(`load average at start: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);

// The first start after a build: bin/run.js finds the manifest missing or stale and rebuilds it.
rmSync(manifest, { force: true });
const first = timeRun([bin, '--version'], true);
process.stdout.write(`${'first run after a build (manifest rebuilt)'.padEnd(44)} ${first.toFixed(0)} ms\n`);
if (!existsSync(manifest)) fail('bin/run.js did not write oclif.manifest.json');

const result = measure('hookrelay --version', [bin, '--version'], true);

if (args.compare) {
  measure('node -e 0 (Node start-up alone)', ['-e', '0'], false);
  // The CLI as it started before the manifest: oclif imports every command module to list them.
  const hidden = `${manifest}.bench-hidden`;
  renameSync(manifest, hidden);
  try {
    const script = `import { execute } from ${JSON.stringify(pathToFileURL(path.join(cliRoot, 'node_modules', '@oclif', 'core', 'lib', 'index.js')).href)};
await execute({ dir: ${JSON.stringify(pathToFileURL(bin).href)}, args: ['--version'] });`;
    measure('hookrelay --version without a manifest', ['--input-type=module', '-e', script], true);
  } finally {
    renameSync(hidden, manifest);
  }
}

process.stdout.write(`load average at end: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
const met = result.p50 <= TARGET_MS;
process.stdout.write(`target p50 ≤ ${TARGET_MS} ms: ${met ? 'met' : 'NOT met'} (p50 ${result.p50.toFixed(0)} ms)\n`);
if (args.enforce && !met) process.exit(1);
