import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * What this server is: its package version, read once from its package.json (one directory up from
 * dist/version.js, two from the bundled program dist/bin/hookrelay-server.cjs), and the commit it was
 * built from, which `pnpm build` writes to dist/build-info.json (scripts/write-build-info.mjs). A
 * build without git, or a run from the sources without a build, says `unknown`.
 */
function findServerPackage(): { dir: string; version: string } {
  const candidates = [new URL('../package.json', import.meta.url), new URL('../../package.json', import.meta.url)].map((url) => fileURLToPath(url));
  for (const file of candidates) {
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
    if (pkg.name === '@hookrelay/server' && typeof pkg.version === 'string') return { dir: path.dirname(file), version: pkg.version };
  }
  throw new Error(`@hookrelay/server's package.json is not at ${candidates.join(' or ')}`);
}

/** The name of the file `pnpm build` writes into the package's dist/. */
export const BUILD_INFO_FILE = 'build-info.json';
export const UNKNOWN_COMMIT = 'unknown';
const COMMIT_SHAPE = /^[0-9a-f]{7,64}$/;

function readCommit(packageDir: string): string {
  try {
    const info = JSON.parse(readFileSync(path.join(packageDir, 'dist', BUILD_INFO_FILE), 'utf8')) as { commit?: unknown };
    return typeof info.commit === 'string' && COMMIT_SHAPE.test(info.commit) ? info.commit : UNKNOWN_COMMIT;
  } catch {
    return UNKNOWN_COMMIT;
  }
}

const serverPackage = findServerPackage();
export const SERVER_VERSION: string = serverPackage.version;
/** The directory of the server's package.json: where it was installed, beside which its optional peers go (`installCommand` of `@hookrelay/shared/install-command`). */
export const SERVER_PACKAGE_DIR: string = serverPackage.dir;
/** The git commit the server was built from, or `unknown`. */
export const SERVER_COMMIT: string = readCommit(serverPackage.dir);
