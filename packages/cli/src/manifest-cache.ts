import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * oclif's command manifest, kept fresh by the CLI itself.
 *
 * Without `oclif.manifest.json` oclif imports every command module at start-up to learn the
 * commands and their flags (zod, undici and the schemas come with them), which would multiply the
 * start of `hookrelay --version` (BENCHMARKS.md, CLI start-up). With the manifest it imports only the command
 * that runs. A manifest that no longer matches the compiled commands hides new commands and
 * flags, so none is committed; instead `bin/run.js` calls `ensureFreshManifest` before oclif
 * starts: the manifest carries a fingerprint of everything it was built from (size and mtime of
 * every compiled file of the CLI and of @hookrelay/shared, which supplies flag options, and the
 * package.json of the CLI and of @oclif/core), and when that no longer matches the files it is
 * built again from the compiled commands and replaced atomically. Checking is one stat call per
 * file.
 */

export const MANIFEST_FILE = 'oclif.manifest.json';

/** Our own field in the manifest; oclif reads only `version` and `commands`. */
const FINGERPRINT_FIELD = 'hookrelayFingerprint';

/**
 * The fingerprint of the manifest `pnpm pack` puts in the package (scripts/pack-manifest.mjs). An
 * installed package changes only by a new install, which brings its own manifest, and its files'
 * times and its dependencies' places are the installer's: such a manifest is used as it is.
 */
export const PACKED_FINGERPRINT = 'packed';

interface ManifestOnDisk {
  version?: unknown;
  commands?: unknown;
  [FINGERPRINT_FIELD]?: unknown;
}

/**
 * The `.js` files under `dir`, as paths relative to it (a hand-made walk: Node 20's recursive
 * readdir is much slower).
 */
function listJsFiles(dir: string, prefix = '', out: string[] = []): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const entry of entries) {
    if (entry.isDirectory()) listJsFiles(join(dir, entry.name), `${prefix}${entry.name}/`, out);
    else if (entry.name.endsWith('.js')) out.push(`${prefix}${entry.name}`);
  }
  return out;
}

function describeFile(path: string): string {
  try {
    const stats = statSync(path);
    return `${stats.size}:${Math.trunc(stats.mtimeMs)}`;
  } catch {
    return 'missing';
  }
}

/**
 * The package root of a dependency as the CLI resolves it, or undefined when it cannot be found.
 * The usual place is tried first: module resolution costs several milliseconds at start-up.
 */
function packageRoot(root: string, name: string): string | undefined {
  const nearby = join(root, 'node_modules', name);
  if (existsSync(join(nearby, 'package.json'))) return nearby;
  try {
    return dirname(createRequire(join(root, 'package.json')).resolve(`${name}/package.json`));
  } catch {
    return undefined;
  }
}

/**
 * What the manifest depends on, as one string: the files' names, sizes and modification times.
 * Content hashing would survive a re-install that changes mtimes, but costs ten times as much on
 * every start; an mtime change only costs one rebuild of the manifest.
 */
export function manifestFingerprint(root: string): string {
  const parts: string[] = [`cli/package.json=${describeFile(join(root, 'package.json'))}`];
  for (const file of listJsFiles(join(root, 'dist'))) parts.push(`cli/${file}=${describeFile(join(root, 'dist', file))}`);
  const shared = packageRoot(root, '@hookrelay/shared');
  if (shared !== undefined) {
    parts.push(`shared/package.json=${describeFile(join(shared, 'package.json'))}`);
    for (const file of listJsFiles(join(shared, 'dist'))) parts.push(`shared/${file}=${describeFile(join(shared, 'dist', file))}`);
  }
  const core = packageRoot(root, '@oclif/core');
  if (core !== undefined) parts.push(`core/package.json=${describeFile(join(core, 'package.json'))}`);
  return parts.join('\n');
}

function readManifest(path: string): ManifestOnDisk | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as ManifestOnDisk;
  } catch {
    return undefined;
  }
}

/** Build the manifest from the compiled commands, as `oclif manifest` does, with our fingerprint. */
export async function buildManifest(root: string, fingerprint = manifestFingerprint(root)): Promise<Record<string, unknown>> {
  const { Plugin } = await import('@oclif/core');
  const plugin = new Plugin({ root, type: 'core', ignoreManifest: true, errorOnManifestCreate: true });
  await plugin.load();
  return { ...plugin.manifest, [FINGERPRINT_FIELD]: fingerprint };
}

/** Write through a temporary file and a rename, so that a concurrent start never reads half a file. */
export function writeManifest(root: string, manifest: Record<string, unknown>): void {
  const path = join(root, MANIFEST_FILE);
  const temporary = `${path}.${process.pid}.${Date.now()}.${Math.random().toString(36).slice(2)}.tmp`;
  try {
    writeFileSync(temporary, `${JSON.stringify(manifest)}\n`);
    renameSync(temporary, path);
  } finally {
    rmSync(temporary, { force: true });
  }
}

export type ManifestState = 'fresh' | 'rebuilt' | 'removed' | 'unavailable';

/**
 * Make `root/oclif.manifest.json` match the compiled commands, or remove it when it cannot be
 * rebuilt (a command that fails to load, a read-only install), so that oclif never works from a
 * stale one. Never throws: the CLI then simply starts without a manifest.
 */
export async function ensureFreshManifest(root: string): Promise<ManifestState> {
  const path = join(root, MANIFEST_FILE);
  const current = readManifest(path);
  if (current !== undefined && current[FINGERPRINT_FIELD] === PACKED_FINGERPRINT) return 'fresh';
  const fingerprint = manifestFingerprint(root);
  if (current !== undefined && current[FINGERPRINT_FIELD] === fingerprint) return 'fresh';
  try {
    const manifest = await buildManifest(root);
    // Files that changed while the manifest was built (a build running now): leave it for next time.
    if (manifest[FINGERPRINT_FIELD] !== manifestFingerprint(root)) throw new Error('files changed while building the manifest');
    writeManifest(root, manifest);
    return 'rebuilt';
  } catch {
    if (current === undefined) return 'unavailable';
    try {
      rmSync(path, { force: true });
      return 'removed';
    } catch {
      return 'unavailable';
    }
  }
}
