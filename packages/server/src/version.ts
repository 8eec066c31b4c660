import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The server package's package.json: one directory up from dist/version.js, two from the bundled
 * program (dist/bin/hookrelay-server.js, scripts/bundle-server.mjs).
 */
function packageJsonPath(): string {
  const candidates = [new URL('../package.json', import.meta.url), new URL('../../package.json', import.meta.url)].map((url) => fileURLToPath(url));
  return candidates.find((file) => existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as { name?: string }).name === '@hookrelay/server') ?? candidates[0]!;
}

/** The server package's version, read once from its package.json. */
export const SERVER_VERSION: string = (JSON.parse(readFileSync(packageJsonPath(), 'utf8')) as { version: string }).version;
