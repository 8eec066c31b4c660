#!/usr/bin/env node
// Writes dist/build-info.json, {"commit": "<git commit>"}: the commit the server reports in /healthz
// and hookrelay_build_info (src/version.ts). Outside a git checkout (a source tarball, a build
// without git) the commit is "unknown". An argument names another directory to write it to (tests).
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
let commit = 'unknown';
try {
  const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: packageDir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  if (/^[0-9a-f]{40,64}$/.test(head)) commit = head;
} catch {
  // no git, or not a checkout
}
const outDir = process.argv[2] ?? join(packageDir, 'dist');
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, 'build-info.json'), `${JSON.stringify({ commit })}\n`);
