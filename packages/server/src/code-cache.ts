// A V8 code cache for the bundled server program. Node 20 compiles the bundle and every function its
// start runs on each start (BENCHMARKS.md, Embedded start-up and memory): the bundle is run
// through vm.Script with the bytecode of the previous start's compiled functions, saved once per
// bundle, Node version and set of V8 flags. Node 22's module.enableCompileCache() does the same for
// ES modules; Node 20 offers it only for scripts, so the bundle is a CommonJS script.
//
// This module is imported by the launcher (dist/bin/hookrelay-server.js) and by the bundle, two
// separate module instances: they meet through one global slot.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';

/**
 * V8 flags the launcher sets before compiling. A code cache is accepted only by a process whose V8
 * flags were those of the process that wrote it, so the flags the server would set later (PGlite's
 * WebAssembly on the baseline compiler: the embedded default, see runtime.ts) are set first.
 */
export const LAUNCH_V8_FLAGS: readonly string[] = ['--liftoff-only'];

/** Cache files kept per directory: one per install path, bundle build, Node version and flag set in use. */
const KEPT_CACHE_FILES = 4;

/** What became of the cache at this start. */
export type CodeCacheStatus = 'used' | 'rejected' | 'missing' | 'off';

interface CodeCacheState {
  status: CodeCacheStatus;
  /** Writes the cache of the functions compiled so far, unless the one read was used. */
  save(): void;
  flagsChanged: boolean;
}

const STATE_SLOT = Symbol.for('hookrelay.codeCache');

function state(): CodeCacheState | undefined {
  return (globalThis as { [STATE_SLOT]?: CodeCacheState })[STATE_SLOT];
}

/**
 * The directory for code caches, ~/.cache/hookrelay/code-cache (the home from HOME, else the
 * account's); undefined without a home. The launcher runs before the server's configuration is
 * read, so nothing here is configurable: the home is the place that is the user's own.
 */
export function codeCacheDir(home: () => string = homedir): string | undefined {
  let dir: string;
  try {
    dir = home();
  } catch {
    return undefined;
  }
  return dir ? path.join(dir, '.cache', 'hookrelay', 'code-cache') : undefined;
}

export interface RunScriptOptions {
  /** A CommonJS script: run with `require`, `module`, `__filename` and `__dirname` of its own path. */
  scriptFile: string;
  /** Where cache files are read and written; undefined runs the script without a cache. */
  cacheDir: string | undefined;
  /** Part of the cache key: what changes the compiled code besides the source (node's V8 flags). */
  flagsKey: string;
}

/**
 * Compiles and runs a CommonJS script with the code cache of an earlier run when one matches, and
 * makes `saveCodeCache()` write one when none did. The cache never changes what runs: V8 checks it
 * against its own version and flags and the source's length, the file name holds a hash of the
 * source, Node's version and the flags, and a cache V8 rejects is compiled anew. The hash holds the
 * script's path too: functions from a cache keep the file name they were compiled under, so two
 * installs of one build sharing a cache would name each other's path in stack traces.
 */
export function runScriptWithCodeCache(options: RunScriptOptions): CodeCacheStatus {
  const bytes = readFileSync(options.scriptFile);
  const source = bytes.toString('utf8').replace(/^#!.*/u, '');
  const cacheFile =
    options.cacheDir === undefined
      ? undefined
      : path.join(
          options.cacheDir,
          `${createHash('sha256').update(`${process.version}\0${process.arch}\0${options.flagsKey}\0${path.resolve(options.scriptFile)}\0`).update(bytes).digest('hex').slice(0, 32)}.bin`,
        );
  let cachedData: Buffer | undefined;
  if (cacheFile !== undefined) {
    try {
      cachedData = readFileSync(cacheFile);
    } catch {
      // Missing or unreadable: compiled without it, written after the start.
    }
  }
  // The wrapper Node's CommonJS loader puts around a module, on the first line as there.
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) { ${source}\n});`, {
    filename: options.scriptFile,
    cachedData,
  });
  const status: CodeCacheStatus = cacheFile === undefined ? 'off' : cachedData === undefined ? 'missing' : script.cachedDataRejected ? 'rejected' : 'used';
  const slot: CodeCacheState = {
    status,
    flagsChanged: false,
    save() {
      if (cacheFile === undefined || slot.status === 'used' || slot.flagsChanged) return;
      slot.status = 'used'; // once per process
      writeCacheFile(cacheFile, script.createCachedData());
    },
  };
  (globalThis as { [STATE_SLOT]?: CodeCacheState })[STATE_SLOT] = slot;
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void;
  const module = { exports: {} as unknown, filename: options.scriptFile, id: '.', loaded: false };
  wrapper.call(module.exports, module.exports, createRequire(options.scriptFile), module, options.scriptFile, path.dirname(options.scriptFile));
  return status;
}

/** Written to a temporary file and renamed: processes starting at once never read half a cache. */
function writeCacheFile(cacheFile: string, data: Buffer): void {
  const dir = path.dirname(cacheFile);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const temporary = `${cacheFile}.${process.pid}.tmp`;
    writeFileSync(temporary, data, { mode: 0o600 });
    renameSync(temporary, cacheFile);
    pruneCacheDir(dir, cacheFile);
  } catch {
    // A cache that cannot be written (read-only home, full disk) only costs the next start its speed.
  }
}

/** Keeps the newest few cache files: every build of the bundle writes a new one. */
function pruneCacheDir(dir: string, keep: string): void {
  const files = readdirSync(dir)
    .filter((name) => name.endsWith('.bin'))
    .map((name) => path.join(dir, name))
    .filter((file) => file !== keep)
    .map((file) => ({ file, mtimeMs: statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? 0 }))
    .sort((a, b) => b.mtimeMs - a.mtimeMs);
  for (const { file } of files.slice(KEPT_CACHE_FILES - 1)) rmSync(file, { force: true });
}

/**
 * Writes the code cache of what this process has compiled so far, when it started without a usable
 * one: called a second after the server's worker and sweepers start, so the cache holds the start's
 * functions and their first round's. A no-op outside the launcher (tests, dist/main.js).
 */
export function saveCodeCache(): void {
  state()?.save();
}

/**
 * Sets a V8 flag. One the launcher did not set changes the flags a cache is checked against, so
 * this process then writes none (it would be rejected by every start with the launcher's flags).
 */
export function setV8Flag(flag: string): void {
  v8.setFlagsFromString(flag);
  const slot = state();
  if (slot && !LAUNCH_V8_FLAGS.includes(flag)) slot.flagsChanged = true;
}
