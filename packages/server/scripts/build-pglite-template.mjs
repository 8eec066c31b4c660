#!/usr/bin/env node
// Writes dist/pglite-template.tar.gz and dist/pglite-template.json: a PGlite data dir with the
// shipped migrations applied, from which the embedded server makes each new data dir instead of
// running initdb (src/db/pglite-template.ts). Run by the root `build` after tsc; does nothing when
// the template there matches the migrations and the installed PGlite.
import { buildPGliteTemplate, PGLITE_TEMPLATE_DIR, PGLITE_TEMPLATE_ARCHIVE } from '../dist/db/pglite-template.js';

const started = Date.now();
const wrote = await buildPGliteTemplate();
process.stderr.write(
  wrote
    ? `pglite template: wrote ${PGLITE_TEMPLATE_DIR}${PGLITE_TEMPLATE_ARCHIVE} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`
    : 'pglite template: up to date\n',
);
