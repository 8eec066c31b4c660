#!/usr/bin/env node
import { fileURLToPath } from 'node:url';
import { execute } from '@oclif/core';
import { ensureFreshManifest } from '../dist/manifest-cache.js';

// oclif starts from a manifest of the commands when one exists; it is rebuilt when the compiled
// commands changed since (src/manifest-cache.ts), so that a stale one never hides a command.
await ensureFreshManifest(fileURLToPath(new URL('..', import.meta.url)));
await execute({ dir: import.meta.url });
