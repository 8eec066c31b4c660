import { closeSync, ftruncateSync, openSync, readFileSync, renameSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { mkdir, open, readFile, rm, rmdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { StreamResultFrame } from '@hookrelay/shared';
import { UUID_PATTERN } from '@hookrelay/shared/ids';
import { CONFIG_DIR_MODE, CONFIG_FILE_MODE } from '../config.js';
import { CliErrorCode, CliFailure } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import type { PendingResultFrame, PendingResults } from './ports.js';

/**
 * Where `listen` keeps its place, so that it never loses a message across restarts (docs/cli.md,
 * Order, cursor and resume): one file per profile, endpoint and listener
 * slot, `<config dir>/cursors/<profile>/<endpoint-id>[.<slot>].json`, holding the id of the last
 * message processed, and beside it `<file>.results` (one JSON line per result of the app not yet
 * acknowledged by the server). A running listener holds its slot with `<file>.lock` (its pid), so
 * that a second listener on the same endpoint and machine gets a slot, and a cursor, of its own.
 *
 * The results are a journal of their own, not part of the cursor's record, because a save happens
 * after every delivery while results wait for their acknowledgement: written into the record, every
 * save would rewrite all of them, and a record longer than a page can only be replaced by a rename.
 * Appending the new ones, and emptying the journal when none is pending, costs one small write. The
 * journal may also hold answers acknowledged since it was last emptied or rewritten: a restart sends
 * them again, and the server records each result id once.
 */

/** The first slot's name; its file has no suffix. */
export const DEFAULT_SLOT = 'default';
export const SLOT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/u;
/** Slots tried when no --name is given: default, 2, 3, … */
const MAX_AUTO_SLOTS = 100;
/** The directory mutex of slot selection is stale (its holder died) after this long. */
const MUTEX_STALE_MS = 10_000;
const MUTEX_WAIT_MS = 15_000;
/**
 * A record this long or shorter is updated in place with one write at offset 0: within one page, a
 * write that a killed process cannot leave half done.
 */
const IN_PLACE_MAX_BYTES = 4096;
/** A record is padded to a multiple of this, so that one a little longer than the last still fits in place. */
const RECORD_STEP_BYTES = 1024;

export interface CursorFile {
  endpoint_id: string;
  slot: string;
  cursor: string;
  updated_at: string;
  /**
   * Results of the app the server has not acknowledged yet, oldest first, as CLIs before the results
   * journal stored them: read, never written.
   */
  pending_results?: PendingResultFrame[];
}

/** What a cursor file holds. */
export interface StoredCursor {
  cursor: string;
  /** The results to send again. */
  results: PendingResultFrame[];
  /** Stored results that are not valid results, left out. */
  unreadableResults: number;
}

/** A valid stored result, or undefined. */
function storedResult(entry: unknown): PendingResultFrame | undefined {
  const parsed = StreamResultFrame.safeParse(entry);
  if (!parsed.success || parsed.data.result_id === undefined) return undefined;
  return { ...parsed.data, result_id: parsed.data.result_id.toLowerCase() };
}

/** The valid results of a stored `pending_results` (anything else is counted, not kept). */
function storedResults(value: unknown): { results: PendingResultFrame[]; unreadable: number } {
  if (value === undefined) return { results: [], unreadable: 0 };
  if (!Array.isArray(value)) return { results: [], unreadable: 1 };
  const results: PendingResultFrame[] = [];
  for (const entry of value) {
    const result = storedResult(entry);
    if (result !== undefined) results.push(result);
  }
  return { results, unreadable: value.length - results.length };
}

/**
 * The results of a journal's text. A last line without its newline is a write that a killed process
 * left unfinished: the cursor was not saved after it, so its message is delivered again, and it is
 * left out without being counted.
 */
function journalResults(text: string): { results: PendingResultFrame[]; unreadable: number } {
  const lines = text.split('\n');
  lines.pop();
  const results: PendingResultFrame[] = [];
  let unreadable = 0;
  for (const line of lines) {
    let result: PendingResultFrame | undefined;
    try {
      result = storedResult(JSON.parse(line));
    } catch {
      result = undefined;
    }
    if (result === undefined) unreadable += 1;
    else results.push(result);
  }
  return { results, unreadable };
}

/** One JSON line per result. */
function journalLines(results: readonly PendingResultFrame[]): Buffer {
  return Buffer.from(results.map((result) => `${JSON.stringify(result)}\n`).join(''));
}

/** No result pending, none added. */
const NO_RESULTS: PendingResults = { added: [], count: 0, all: () => [] };

/** The journal is rewritten with the pending results only once it is this long and holds four times as many lines. */
const JOURNAL_COMPACT_MIN_BYTES = 64 * 1024;

/** The record as written: the JSON, padded with spaces to `size` bytes, then a newline. */
function paddedRecord(json: Buffer, size: number): Buffer {
  const record = Buffer.alloc(size, 0x20);
  json.copy(record);
  record[size - 1] = 0x0a;
  return record;
}

export interface CursorStoreOptions {
  configDir: string;
  profile: string;
  endpointId: string;
  /** --name; undefined picks the first free slot. */
  name?: string | undefined;
  pid?: number;
  /** Whether a process is running (injected in tests). */
  isAlive?: (pid: number) => boolean;
}

export function cursorDirectory(configDir: string, profile: string): string {
  return join(configDir, 'cursors', profile);
}

export function cursorFileName(endpointId: string, slot: string): string {
  return slot === DEFAULT_SLOT ? `${endpointId}.json` : `${endpointId}.${slot}.json`;
}

export function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function storeFailure(message: string): CliFailure {
  return new CliFailure(CliErrorCode.CONFIG_ERROR, message, ExitCode.GENERIC);
}

function rmSyncQuiet(file: string): void {
  try {
    unlinkSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** mkdir is atomic: whoever creates the directory holds the mutex. A dead holder's is taken over. */
async function withDirectoryMutex<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const mutex = join(dir, '.slots.lock');
  const deadline = Date.now() + MUTEX_WAIT_MS;
  for (;;) {
    try {
      await mkdir(mutex);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const info = await stat(mutex).catch(() => undefined);
      if (info !== undefined && Date.now() - info.mtimeMs > MUTEX_STALE_MS) {
        await rmdir(mutex).catch(() => {});
        continue;
      }
      if (Date.now() > deadline) throw storeFailure(`cannot pick a listener slot: ${mutex} is held by another process`);
      await sleep(20);
    }
  }
  try {
    return await fn();
  } finally {
    await rmdir(mutex).catch(() => {});
  }
}

async function readPid(lockFile: string): Promise<number | undefined> {
  try {
    const pid = Number.parseInt(await readFile(lockFile, 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw storeFailure(`cannot read ${lockFile}: ${(error as Error).message}`);
  }
}

export class CursorStore {
  private released = false;
  /** The cursor file, open for in-place updates after the first save of this run. */
  private fd: number | undefined;
  private length = -1;
  /** The results journal, open for appends once a save of this run has written it. */
  private journalFd: number | undefined;
  private journalBytes = 0;
  /** Lines in the journal: the results pending, and those acknowledged since it was last emptied or rewritten. */
  private journalLines = 0;
  /** Whether this run has set the journal in order (written it, or found nothing to keep). */
  private journalChecked = false;

  private constructor(
    readonly endpointId: string,
    readonly slot: string,
    readonly file: string,
    readonly lockFile: string,
    private readonly pid: number,
  ) {}

  /** The results journal beside the cursor file. */
  get journalFile(): string {
    return `${this.file}.results`;
  }

  /** Claims a slot (the named one, or the first free one) for this process. */
  static async open(options: CursorStoreOptions): Promise<CursorStore> {
    const dir = cursorDirectory(options.configDir, options.profile);
    const pid = options.pid ?? process.pid;
    const isAlive = options.isAlive ?? processIsAlive;
    if (options.name !== undefined && !SLOT_NAME_PATTERN.test(options.name)) {
      throw new CliFailure(
        CliErrorCode.INVALID_ARGUMENTS,
        `invalid listener name "${options.name}"`,
        ExitCode.USAGE,
        'A name is 1-64 letters, digits, "_" or "-", starting with a letter or digit.',
      );
    }
    try {
      await mkdir(dir, { recursive: true, mode: CONFIG_DIR_MODE });
    } catch (error) {
      throw storeFailure(`cannot create ${dir}: ${(error as Error).message}`);
    }
    return withDirectoryMutex(dir, async () => {
      const candidates = options.name !== undefined ? [options.name] : [DEFAULT_SLOT, ...Array.from({ length: MAX_AUTO_SLOTS - 1 }, (_, i) => String(i + 2))];
      for (const slot of candidates) {
        const file = join(dir, cursorFileName(options.endpointId, slot));
        const lockFile = `${file}.lock`;
        const holder = await readPid(lockFile);
        if (holder !== undefined && holder !== pid && isAlive(holder)) {
          if (options.name !== undefined) {
            throw new CliFailure(
              CliErrorCode.SLOT_IN_USE,
              `listener "${slot}" of endpoint ${options.endpointId} is already running (pid ${holder})`,
              ExitCode.CONFLICT,
              'Give this listener another --name, or leave --name out to take the first free slot.',
            );
          }
          continue;
        }
        // Free, or its holder is gone: (re)write the lock with our pid.
        const handle = await open(lockFile, 'w', CONFIG_FILE_MODE);
        try {
          await handle.writeFile(`${pid}\n`);
        } finally {
          await handle.close();
        }
        return new CursorStore(options.endpointId, slot, file, lockFile, pid);
      }
      throw new CliFailure(
        CliErrorCode.SLOT_IN_USE,
        `every listener slot of endpoint ${options.endpointId} is in use`,
        ExitCode.CONFLICT,
        'Stop a running listener, or name this one with --name.',
      );
    });
  }

  /**
   * The stored cursor and pending results; null when this slot has never listened. A damaged file is
   * an error, not a silent restart (a damaged result is left out and counted).
   */
  async read(): Promise<StoredCursor | null> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw storeFailure(`cannot read ${this.file}: ${(error as Error).message}`);
    }
    let parsed: Partial<CursorFile>;
    try {
      parsed = JSON.parse(text) as Partial<CursorFile>;
    } catch {
      throw new CliFailure(
        CliErrorCode.CONFIG_ERROR,
        `${this.file} is not valid JSON`,
        ExitCode.GENERIC,
        'Delete it and start again with --since <time> (or --from-start) to choose where to resume.',
      );
    }
    if (typeof parsed !== 'object' || parsed === null || typeof parsed.cursor !== 'string' || !UUID_PATTERN.test(parsed.cursor)) {
      throw new CliFailure(
        CliErrorCode.CONFIG_ERROR,
        `${this.file} holds no valid cursor`,
        ExitCode.GENERIC,
        'Delete it and start again with --since <time> (or --from-start) to choose where to resume.',
      );
    }
    const legacy = storedResults(parsed.pending_results);
    let journalText = '';
    try {
      journalText = await readFile(this.journalFile, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw storeFailure(`cannot read ${this.journalFile}: ${(error as Error).message}`);
    }
    const journal = journalResults(journalText);
    const seen = new Set<string>();
    const results = [...legacy.results, ...journal.results].filter((result) => !seen.has(result.result_id) && seen.add(result.result_id));
    return { cursor: parsed.cursor.toLowerCase(), results, unreadableResults: legacy.unreadable + journal.unreadable };
  }

  /**
   * Saves the cursor, with the results not yet acknowledged, after every delivery, so it must be
   * cheap and never leave a damaged file. The results go first, so that the cursor never moves past
   * a message whose answer is not kept:
   * - the first save of a run that has results writes the journal whole (a temporary file renamed
   *   over it), as does a save that would leave it with four times as many lines as are pending;
   *   other saves append the results added since the last one with one write, or empty it when none
   *   is pending;
   *
   * then the cursor's record:
   * - the first save of a run writes a temporary file and renames it over the old one; so does a
   *   save whose record no longer fits the file, or is longer than a page;
   * - other saves overwrite the file in place with one `pwrite` at offset 0 of a record padded with
   *   spaces to the file's length (a multiple of 1 KiB, at most a page). A single write within a
   *   page cannot be torn by a crash of the process, and it avoids what a rename over an existing
   *   file costs on every save (ext4 flushes the new file's data before such a rename: up to a
   *   millisecond per message under disk load).
   * Synchronous on purpose: a few microseconds, cheaper than a thread-pool round trip.
   */
  async save(cursor: string, results: PendingResults = NO_RESULTS, now: Date = new Date()): Promise<void> {
    this.saveResults(results);
    const content: CursorFile = { endpoint_id: this.endpointId, slot: this.slot, cursor, updated_at: now.toISOString() };
    const json = Buffer.from(JSON.stringify(content));
    const needed = json.length + 1;
    try {
      if (this.fd !== undefined && needed <= this.length && this.length <= IN_PLACE_MAX_BYTES) {
        writeSync(this.fd, paddedRecord(json, this.length), 0, this.length, 0);
        return;
      }
      this.closeFile();
      const size = needed <= IN_PLACE_MAX_BYTES ? Math.min(IN_PLACE_MAX_BYTES, Math.ceil(needed / RECORD_STEP_BYTES) * RECORD_STEP_BYTES) : needed;
      const temporary = `${this.file}.${this.pid}.tmp`;
      try {
        writeFileSync(temporary, paddedRecord(json, size), { mode: CONFIG_FILE_MODE });
        renameSync(temporary, this.file);
      } catch (error) {
        await rm(temporary, { force: true });
        throw error;
      }
      this.fd = openSync(this.file, 'r+');
      this.length = size;
    } catch (error) {
      throw storeFailure(`cannot write ${this.file}: ${(error as Error).message}`);
    }
  }

  private saveResults(results: PendingResults): void {
    try {
      if (results.count === 0) {
        if (!this.journalChecked) {
          // What a previous run left is pending no more: the listener sent it again and had it acknowledged.
          rmSyncQuiet(this.journalFile);
          this.journalChecked = true;
        } else if (this.journalFd !== undefined && this.journalBytes > 0) {
          ftruncateSync(this.journalFd, 0);
          this.journalBytes = 0;
          this.journalLines = 0;
        }
        return;
      }
      if (this.journalFd === undefined) {
        this.rewriteJournal(results.all());
        return;
      }
      if (results.added.length === 0) return;
      const lines = journalLines(results.added);
      if (this.journalBytes + lines.length >= JOURNAL_COMPACT_MIN_BYTES && this.journalLines + results.added.length > 4 * results.count) {
        this.rewriteJournal(results.all());
        return;
      }
      writeSync(this.journalFd, lines, 0, lines.length, this.journalBytes);
      this.journalBytes += lines.length;
      this.journalLines += results.added.length;
    } catch (error) {
      // What the journal holds is unknown now (a write cut short): the next save writes it whole.
      this.closeJournal();
      throw storeFailure(`cannot write ${this.journalFile}: ${(error as Error).message}`);
    }
  }

  private rewriteJournal(results: readonly PendingResultFrame[]): void {
    this.closeJournal();
    const temporary = `${this.journalFile}.${this.pid}.tmp`;
    const lines = journalLines(results);
    try {
      writeFileSync(temporary, lines, { mode: CONFIG_FILE_MODE });
      renameSync(temporary, this.journalFile);
    } catch (error) {
      rmSyncQuiet(temporary);
      throw error;
    }
    this.journalFd = openSync(this.journalFile, 'r+');
    this.journalBytes = lines.length;
    this.journalLines = results.length;
    this.journalChecked = true;
  }

  private closeJournal(): void {
    if (this.journalFd === undefined) return;
    try {
      closeSync(this.journalFd);
    } catch {
      // Already closed.
    }
    this.journalFd = undefined;
    this.journalBytes = 0;
    this.journalLines = 0;
  }

  private closeFile(): void {
    if (this.fd === undefined) return;
    try {
      closeSync(this.fd);
    } catch {
      // Already closed.
    }
    this.fd = undefined;
    this.length = -1;
  }

  /** Closes both files; an empty journal is removed (nothing pending). */
  private closeFiles(): void {
    this.closeFile();
    const empty = this.journalFd !== undefined && this.journalBytes === 0;
    this.closeJournal();
    if (empty) rmSyncQuiet(this.journalFile);
  }

  /** Gives the slot up (only if the lock is still ours). */
  async release(): Promise<void> {
    this.closeFiles();
    if (this.released) return;
    this.released = true;
    if ((await readPid(this.lockFile).catch(() => undefined)) === this.pid) await unlink(this.lockFile).catch(() => {});
  }

  /** The same, synchronously, for `process.on('exit')`. */
  releaseSync(): void {
    this.closeFiles();
    if (this.released) return;
    this.released = true;
    try {
      if (Number.parseInt(readFileSync(this.lockFile, 'utf8'), 10) === this.pid) unlinkSync(this.lockFile);
    } catch {
      // Already gone.
    }
  }
}
