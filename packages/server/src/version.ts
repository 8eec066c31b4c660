import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The server package's version, read once from its package.json: one directory up from
 * dist/version.js, two from the bundled program (dist/bin/hookrelay-server.cjs, scripts/bundle-server.mjs).
 */
function readServerVersion(): string {
  const candidates = [new URL('../package.json', import.meta.url), new URL('../../package.json', import.meta.url)].map((url) => fileURLToPath(url));
  for (const file of candidates) {
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
    if (pkg.name === '@hookrelay/server' && typeof pkg.version === 'string') return pkg.version;
  }
  throw new Error(`@hookrelay/server's package.json is not at ${candidates.join(' or ')}`);
}

export const SERVER_VERSION: string = readServerVersion();
