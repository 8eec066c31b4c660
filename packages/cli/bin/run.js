#!/usr/bin/env node
import { homedir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { ensureFreshManifest } from '../dist/manifest-cache.js';

// On import, @oclif/core checks the running Node against oclif's own `engines` with semver, whose
// many files every command's start would load. The CLI's own requirement is its package.json's
// `engines`, which the package manager checks at install.
process.env.OCLIF_DISABLE_ENGINE_WARNING ??= '1';

// `hookrelay dev` on a data dir it has used before: its server starts now, while oclif loads, and
// the command takes it over when its flags give the same server (src/dev/early-start.ts).
if (process.argv[2] === 'dev') {
  const [{ startServerEarly }, { processEnvironment }] = await Promise.all([import('../dist/dev/early-start.js'), import('../dist/config.js')]);
  startServerEarly(process.argv.slice(3), processEnvironment(), homedir());
}
const { execute } = await import('@oclif/core');

// oclif starts from a manifest of the commands when one exists; it is rebuilt when the compiled
// commands changed since (src/manifest-cache.ts), so that a stale one never hides a command.
await ensureFreshManifest(fileURLToPath(new URL('..', import.meta.url)));
await execute({ dir: import.meta.url });
