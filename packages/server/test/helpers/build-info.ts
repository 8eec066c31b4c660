import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The version in packages/server/package.json, read here apart from the server's own reading. */
export function serverPackageVersion(): string {
  return (JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as { version: string }).version;
}

/** The commit `pnpm build` recorded in packages/server/dist/build-info.json, or `unknown` without a build. */
export function builtCommit(): string {
  try {
    return (JSON.parse(readFileSync(fileURLToPath(new URL('../../dist/build-info.json', import.meta.url)), 'utf8')) as { commit: string }).commit;
  } catch {
    return 'unknown';
  }
}
