#!/usr/bin/env node
// `prepack` of @hookrelay/cli: writes oclif.manifest.json into the package, so that an installed CLI
// (often read-only: a global install owned by root) starts from a manifest instead of importing every
// command at each call (src/manifest-cache.ts). It is built as `oclif manifest` builds it, from the
// compiled commands, and marked as a packed one: an installed package's files change only by a new
// install, which brings its own manifest. `postpack` (with the argument `remove`) deletes it again,
// so that a checkout keeps rebuilding its manifest from what it compiles.
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildManifest, MANIFEST_FILE, PACKED_FINGERPRINT, writeManifest } from '../dist/manifest-cache.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
if (process.argv[2] === 'remove') {
  rmSync(join(root, MANIFEST_FILE), { force: true });
} else {
  const manifest = await buildManifest(root, PACKED_FINGERPRINT);
  writeManifest(root, manifest);
  process.stderr.write(`${MANIFEST_FILE}: ${Object.keys(manifest.commands ?? {}).length} commands\n`);
}
