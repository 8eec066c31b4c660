import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { installedPGliteVersion } from '../../src/db/pglite-template.js';

/** What an install of @hookrelay/server fetches: only what its bundle leaves outside. */
const pkg = JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as {
  dependencies: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
};

describe('@hookrelay/server package.json', () => {
  it('pins PGlite to exactly the version that makes the template', () => {
    expect(pkg.dependencies['@electric-sql/pglite']).toBe(installedPGliteVersion());
  });

  it('has PGlite as its only dependency; every peer is optional', () => {
    expect(Object.keys(pkg.dependencies)).toEqual(['@electric-sql/pglite']);
    for (const name of Object.keys(pkg.peerDependencies ?? {})) expect(pkg.peerDependenciesMeta?.[name]?.optional, name).toBe(true);
    expect(Object.keys(pkg.peerDependencies ?? {})).toContain('@aws-sdk/client-s3');
  });
});
