import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import type { PGlite } from '@electric-sql/pglite';
import { openPGlite } from './database.js';
import { loadCurrentSql, loadMigrations, migrate, sha256Hex, type CurrentSql, type Migration } from './migrate.js';

/**
 * The template data dir of the embedded database: a PGlite data dir with the migrations applied,
 * saved with `dumpDataDir('gzip')` at build time (scripts/build-pglite-template.mjs). A new data
 * dir is unpacked from it instead of running initdb inside WASM, which costs seconds and a memory
 * peak that the process keeps (WASM memory never shrinks; docs/operating.md, Embedded). Migrations
 * newer than the template run as on any existing database. The manifest beside it says which PGlite
 * made it and which migrations and current SQL files (by content hash) it holds; a template that
 * does not match the installed PGlite or whose migrations are not a prefix of the shipped ones is
 * not used. Its current SQL need not match: the start applies the shipped files whose hash the
 * database does not hold, as on any database.
 */
export const PGLITE_TEMPLATE_DIR = fileURLToPath(new URL('../../dist/', import.meta.url));
export const PGLITE_TEMPLATE_ARCHIVE = 'pglite-template.tar.gz';
export const PGLITE_TEMPLATE_MANIFEST = 'pglite-template.json';

export interface TemplateMigration {
  version: number;
  name: string;
  sha256: string;
}

export interface TemplateCurrentSql {
  name: string;
  sha256: string;
}

export interface PGliteTemplateManifest {
  /** The `@electric-sql/pglite` version that wrote the data dir. */
  pglite: string;
  /** The migrations applied in it, in order. */
  migrations: TemplateMigration[];
  /** The current SQL files applied in it, by name. */
  currentSql: TemplateCurrentSql[];
}

export function installedPGliteVersion(): string {
  const require = createRequire(import.meta.url);
  // The package exports no ./package.json: find it from its entry point (dist/index.cjs).
  const entry = require.resolve('@electric-sql/pglite');
  const pkg = JSON.parse(readFileSync(path.join(path.dirname(entry), '..', 'package.json'), 'utf8')) as { name?: string; version?: string };
  if (pkg.name !== '@electric-sql/pglite' || typeof pkg.version !== 'string') throw new Error(`cannot read the version of @electric-sql/pglite near ${entry}`);
  return pkg.version;
}

export function templateMigrations(migrations: readonly Migration[]): TemplateMigration[] {
  return migrations.map((m) => ({ version: m.version, name: m.name, sha256: sha256Hex(m.script) }));
}

export function templateCurrentSql(files: readonly CurrentSql[]): TemplateCurrentSql[] {
  return files.map((f) => ({ name: f.name, sha256: sha256Hex(f.script) }));
}

/** Why a template cannot be used for these migrations and this PGlite, or undefined when it can. */
export function templateMismatch(manifest: PGliteTemplateManifest, migrations: readonly Migration[], pgliteVersion: string): string | undefined {
  if (manifest.pglite !== pgliteVersion) return `made by PGlite ${manifest.pglite}, installed ${pgliteVersion}`;
  const shipped = templateMigrations(migrations);
  if (manifest.migrations.length > shipped.length) return `it holds ${manifest.migrations.length} migrations, ${shipped.length} are shipped`;
  for (const [i, held] of manifest.migrations.entries()) {
    const current = shipped[i]!;
    if (held.version !== current.version || held.name !== current.name || held.sha256 !== current.sha256) {
      return `its migration ${held.name} differs from the shipped ${current.name}`;
    }
  }
  return undefined;
}

export async function readTemplateManifest(dir = PGLITE_TEMPLATE_DIR): Promise<PGliteTemplateManifest | undefined> {
  try {
    return JSON.parse(await readFile(path.join(dir, PGLITE_TEMPLATE_MANIFEST), 'utf8')) as PGliteTemplateManifest;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Makes a template in `dir` from a new PGlite (initdb) with `migrations` and `currentSql` applied,
 * unless the one there already matches them and the installed PGlite. Returns whether it wrote one.
 */
export async function buildPGliteTemplate(dir = PGLITE_TEMPLATE_DIR, migrations?: Migration[], currentSql?: CurrentSql[]): Promise<boolean> {
  const all = migrations ?? (await loadMigrations());
  const files = currentSql ?? (await loadCurrentSql());
  const existing = await readTemplateManifest(dir);
  const wanted: PGliteTemplateManifest = { pglite: installedPGliteVersion(), migrations: templateMigrations(all), currentSql: templateCurrentSql(files) };
  if (existing && JSON.stringify(existing) === JSON.stringify(wanted) && existsSync(path.join(dir, PGLITE_TEMPLATE_ARCHIVE))) return false;
  const db = await openPGlite();
  try {
    await migrate(db, all, files);
    await writePGliteTemplate(dir, db.pglite, all);
  } finally {
    await db.close();
  }
  return true;
}

/**
 * Saves `pglite`'s data dir as the template in `dir`; `migrations` are the ones applied in it. The
 * current SQL it holds is read from the database's own record of it.
 */
export async function writePGliteTemplate(dir: string, pglite: PGlite, migrations: readonly Migration[]): Promise<void> {
  const held = await pglite.query<TemplateCurrentSql>('SELECT name, sha256 FROM schema_current_sql WHERE replaced_at IS NULL ORDER BY name COLLATE "C"');
  const manifest: PGliteTemplateManifest = { pglite: installedPGliteVersion(), migrations: templateMigrations(migrations), currentSql: held.rows };
  const dump = await pglite.dumpDataDir('gzip');
  await mkdir(dir, { recursive: true });
  // Archive first, manifest last, each renamed into place: a manifest always describes its archive.
  const manifestFile = path.join(dir, PGLITE_TEMPLATE_MANIFEST);
  await rm(manifestFile, { force: true });
  const archive = path.join(dir, PGLITE_TEMPLATE_ARCHIVE);
  await writeFile(`${archive}.tmp`, Buffer.from(await dump.arrayBuffer()));
  await rename(`${archive}.tmp`, archive);
  await writeFile(`${manifestFile}.tmp`, `${JSON.stringify(manifest, null, 2)}\n`);
  await rename(`${manifestFile}.tmp`, manifestFile);
}

/** The template's archive when `dir` holds one that fits these migrations and PGlite; else why not. */
export async function findPGliteTemplate(
  dir = PGLITE_TEMPLATE_DIR,
  migrations?: Migration[],
  pgliteVersion?: string,
): Promise<{ archive: string; manifest: PGliteTemplateManifest } | { reason: string }> {
  const manifest = await readTemplateManifest(dir);
  if (!manifest) return { reason: `no template in ${dir}` };
  const mismatch = templateMismatch(manifest, migrations ?? (await loadMigrations()), pgliteVersion ?? installedPGliteVersion());
  if (mismatch !== undefined) return { reason: `the template in ${dir} does not fit: ${mismatch}` };
  return { archive: path.join(dir, PGLITE_TEMPLATE_ARCHIVE), manifest };
}

export type DataDirOrigin = 'existing' | 'template' | 'initdb';

export interface PrepareDataDirResult {
  origin: DataDirOrigin;
  /** Why initdb runs although the data dir is new (no template, or one that does not match). */
  reason?: string;
}

/**
 * Gets a PGlite data dir ready to open. An existing one is left alone. A new one (absent or empty)
 * is unpacked from the template when there is a matching one; else PGlite runs initdb when it opens.
 */
export async function prepareDataDir(
  pgdata: string,
  options: { templateDir?: string; migrations?: Migration[]; pgliteVersion?: string } = {},
): Promise<PrepareDataDirResult> {
  if (existsSync(pgdata) && readdirSync(pgdata).length > 0) return { origin: 'existing' };
  const template = await findPGliteTemplate(options.templateDir, options.migrations, options.pgliteVersion);
  if ('reason' in template) return { origin: 'initdb', reason: template.reason };
  const archive = await readFile(template.archive);
  await unpackDataDir(archive, pgdata);
  return { origin: 'template' };
}

/**
 * Unpacks a `dumpDataDir('gzip')` archive into `target` (which must not hold anything). The files are
 * written in a sibling directory that is then renamed to `target`: a process killed midway leaves no
 * half-made data dir that would later be taken for an existing database. Nothing is fsynced, as
 * nothing PGlite writes is (it runs PostgreSQL with fsync off): a power cut may cost its last
 * writes either way, and syncing each of the data dir's many files would slow every new start.
 */
export async function unpackDataDir(archive: Buffer, target: string): Promise<void> {
  const staging = `${target}.new`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true, mode: 0o700 });
  // Asynchronous throughout (zlib and file writes on libuv's threads): the server loads its modules
  // on the main thread meanwhile.
  const tar = await promisify(gunzip)(archive, { chunkSize: 1 << 20 });
  const made = new Set([staging]);
  const makeDir = async (dir: string) => {
    if (made.has(dir)) return;
    await mkdir(dir, { recursive: true, mode: 0o700 });
    made.add(dir);
  };
  const files: { destination: string; data: Buffer }[] = [];
  for (const entry of tarEntries(tar)) {
    const destination = path.join(staging, ...entry.segments);
    if (entry.type === 'directory') await makeDir(destination);
    else {
      await makeDir(path.dirname(destination));
      files.push({ destination, data: entry.data });
    }
  }
  const WRITERS = 8;
  let next = 0;
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (next < files.length) {
        const file = files[next++]!;
        await writeFile(file.destination, file.data, { mode: 0o600 });
      }
    }),
  );
  await rm(target, { recursive: true, force: true }); // an empty directory at most (see prepareDataDir)
  await rename(staging, target);
}

interface TarEntry {
  type: 'file' | 'directory';
  /** The path's segments below the archive's root. */
  segments: string[];
  data: Buffer;
}

/** The entries of a ustar archive (what PGlite's dumpDataDir writes: files and directories). */
export function* tarEntries(tar: Buffer): Generator<TarEntry> {
  const BLOCK = 512;
  let offset = 0;
  while (offset + BLOCK <= tar.length) {
    const header = tar.subarray(offset, offset + BLOCK);
    if (header.every((byte) => byte === 0)) return;
    const text = (start: number, length: number) => {
      const field = header.subarray(start, start + length);
      const end = field.indexOf(0);
      return field.subarray(0, end === -1 ? length : end).toString('utf8');
    };
    const name = text(0, 100);
    const size = Number.parseInt(text(124, 12).trim() || '0', 8);
    const typeflag = String.fromCharCode(header[156]!);
    const prefix = text(257, 6).startsWith('ustar') ? text(345, 155) : '';
    if (!Number.isSafeInteger(size) || size < 0) throw new Error(`template archive: bad size in the entry ${name}`);
    const full = prefix === '' ? name : `${prefix}/${name}`;
    const segments = full.split('/').filter((s) => s !== '' && s !== '.');
    if (segments.some((s) => s === '..')) throw new Error(`template archive: the entry ${full} leaves the data dir`);
    const dataStart = offset + BLOCK;
    if (dataStart + size > tar.length) throw new Error(`template archive: the entry ${full} is truncated`);
    offset = dataStart + Math.ceil(size / BLOCK) * BLOCK;
    if (segments.length === 0) continue;
    if (typeflag === '5') yield { type: 'directory', segments, data: Buffer.alloc(0) };
    else if (typeflag === '0' || typeflag === '\0') yield { type: 'file', segments, data: tar.subarray(dataStart, dataStart + size) };
    else throw new Error(`template archive: the entry ${full} has the unsupported type ${JSON.stringify(typeflag)}`);
  }
}
