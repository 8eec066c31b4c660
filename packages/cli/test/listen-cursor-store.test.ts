import { closeSync, existsSync, openSync, readdirSync, readlinkSync, readSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, rmdir, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CliFailure } from '../src/errors.js';
import { cursorDirectory, cursorFileName, CursorStore, processIsAlive } from '../src/listen/cursor-store.js';

const ENDPOINT = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70';
const CURSOR_A = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71';
const CURSOR_B = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f72';

let configDir: string;
let alive: Set<number>;
const isAlive = (pid: number): boolean => alive.has(pid);
const open = (pid: number, name?: string, profile = 'default') => CursorStore.open({ configDir, profile, endpointId: ENDPOINT, name, pid, isAlive });

beforeEach(async () => {
  configDir = await mkdtemp(join(tmpdir(), 'hookrelay-cursors-'));
  alive = new Set();
});
afterEach(async () => {
  await rm(configDir, { recursive: true, force: true });
});

describe('cursor files', () => {
  it('names: <endpoint>.json for the first slot, <endpoint>.<name>.json for others, per profile', () => {
    expect(cursorFileName(ENDPOINT, 'default')).toBe(`${ENDPOINT}.json`);
    expect(cursorFileName(ENDPOINT, '2')).toBe(`${ENDPOINT}.2.json`);
    expect(cursorDirectory('/cfg', 'staging')).toBe('/cfg/cursors/staging');
  });

  it('reads null before the first save, then what was saved; the write is atomic and 0600', async () => {
    alive.add(100);
    const store = await open(100);
    expect(store.slot).toBe('default');
    expect(store.file).toBe(join(configDir, 'cursors', 'default', `${ENDPOINT}.json`));
    expect(await store.read()).toBeNull();
    await store.save(CURSOR_A);
    await store.save(CURSOR_B);
    expect((await store.read())?.cursor).toBe(CURSOR_B);
    expect(JSON.parse(await readFile(store.file, 'utf8'))).toMatchObject({ endpoint_id: ENDPOINT, slot: 'default', cursor: CURSOR_B });
    expect((await stat(store.file)).mode & 0o777).toBe(0o600);
    // Only the cursor and the lock: no temporary file left behind.
    expect((await readdir(join(configDir, 'cursors', 'default'))).sort()).toEqual([`${ENDPOINT}.json`, `${ENDPOINT}.json.lock`]);
  });

  it('a run replaces the file once (temporary file + rename), then updates it in place, always whole', async () => {
    alive.add(100).add(200);
    const previous = await open(100);
    await previous.save(CURSOR_A);
    await previous.release();
    const before = (await stat(previous.file)).ino;

    const store = await open(200);
    await store.save(CURSOR_A);
    const replaced = (await stat(store.file)).ino;
    expect(replaced).not.toBe(before);
    for (let i = 0; i < 200; i++) {
      await store.save(i % 2 === 0 ? CURSOR_B : CURSOR_A, undefined, new Date(Date.UTC(2026, 0, 1, 0, 0, i % 60)));
      // Every state of the file is one complete record.
      expect(JSON.parse(await readFile(store.file, 'utf8')).cursor).toBe(i % 2 === 0 ? CURSOR_B : CURSOR_A);
    }
    expect((await stat(store.file)).ino).toBe(replaced);
    expect((await readFile(store.file, 'utf8')).split('\n')).toHaveLength(2);
    await store.release();
    const next = await open(100);
    expect((await next.read())?.cursor).toBe(CURSOR_A);
  });

  const result = (n: number, bodyBytes = 0) => ({
    type: 'result' as const,
    message_id: CURSOR_A,
    status: 200,
    latency_ms: n,
    error: null as string | null,
    result_id: `0190b2c4-7d2e-7a51-9c3f-${String(n).padStart(12, '0')}`,
    ...(bodyBytes > 0 ? { response_body: Buffer.alloc(bodyBytes, 1).toString('base64') } : {}),
  });
  const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => result(from + i));
  type Result = ReturnType<typeof result>;
  /** What a listener hands a save: the results pending (`all`), of which `added` are new since the last save. */
  const pending = (all: Result[], added: Result[] = all) => ({ added, count: all.length, all: () => all });

  it('keeps the pending results in a journal beside the cursor: appended, emptied when none is pending, the cursor record always in place', async () => {
    alive.add(100);
    const store = await open(100);
    await store.save(CURSOR_A);
    const cursorInode = (await stat(store.file)).ino;
    expect(existsSync(store.journalFile)).toBe(false);

    await store.save(CURSOR_B, pending(range(0, 2)));
    const journalInode = (await stat(store.journalFile)).ino;
    // It holds the app's answers: readable by the owner only, as the cursor file.
    expect((await stat(store.journalFile)).mode & 0o777).toBe(0o600);
    expect(await store.read()).toEqual({ cursor: CURSOR_B, results: range(0, 2), unreadableResults: 0 });
    // Result 0 acknowledged, 2 and 3 new: only the new ones are written, after the old lines.
    await store.save(CURSOR_A, pending(range(1, 4), range(2, 4)));
    const lines = (await readFile(store.journalFile, 'utf8')).split('\n');
    expect(lines.map((line) => (line === '' ? null : (JSON.parse(line) as { latency_ms: number }).latency_ms))).toEqual([0, 1, 2, 3, null]);
    expect(await store.read()).toEqual({ cursor: CURSOR_A, results: range(0, 4), unreadableResults: 0 });
    // None pending: the journal is emptied in place.
    await store.save(CURSOR_B, pending([]));
    expect((await stat(store.journalFile)).size).toBe(0);
    expect(await store.read()).toEqual({ cursor: CURSOR_B, results: [], unreadableResults: 0 });
    await store.save(CURSOR_A, pending([result(7, 6000)]));
    expect(await store.read()).toEqual({ cursor: CURSOR_A, results: [result(7, 6000)], unreadableResults: 0 });
    expect((await stat(store.journalFile)).ino).toBe(journalInode);
    // The cursor's record holds no results, so it stays one page, rewritten in place.
    expect((await stat(store.file)).ino).toBe(cursorInode);
    expect(JSON.parse(await readFile(store.file, 'utf8'))).not.toHaveProperty('pending_results');
    await store.save(CURSOR_B, pending([]));
    await store.release();
    // An empty journal does not outlive its listener.
    expect((await readdir(join(configDir, 'cursors', 'default'))).sort()).toEqual([`${ENDPOINT}.json`]);
  });

  it('a run reads what a killed one left pending (a torn last line left out), sends it again, and rewrites the journal whole', async () => {
    alive.add(100);
    const killed = await open(100);
    await killed.save(CURSOR_A, pending(range(0, 3)));
    // The process dies in the middle of appending result 3: part of a line, no newline.
    await writeFile(killed.journalFile, `${(await readFile(killed.journalFile, 'utf8'))}{"type":"result","message_id":"${CURSOR_A}","sta`);
    alive.delete(100);
    alive.add(200);
    const next = await open(200);
    expect(next.file).toBe(killed.file);
    expect(await next.read()).toEqual({ cursor: CURSOR_A, results: range(0, 3), unreadableResults: 0 });
    // Its first save keeps what is still pending (2, then the new 5) and nothing else.
    await next.save(CURSOR_B, pending([result(2), result(5)], [result(5)]));
    expect(await next.read()).toEqual({ cursor: CURSOR_B, results: [result(2), result(5)], unreadableResults: 0 });
    expect((await readFile(next.journalFile, 'utf8')).trim().split('\n')).toHaveLength(2);
    // A damaged line in the middle is counted, the others kept.
    await writeFile(next.journalFile, `${JSON.stringify(result(1))}\nnot json\n${JSON.stringify({ ...result(3), status: 9000 })}\n${JSON.stringify(result(4))}\n`);
    expect(await next.read()).toEqual({ cursor: CURSOR_B, results: [result(1), result(4)], unreadableResults: 2 });
  });

  it('a run that stops before its first save leaves the journal it found; one whose first save has nothing pending removes it', async () => {
    alive.add(100);
    const previous = await open(100);
    await previous.save(CURSOR_A, pending(range(0, 2)));
    alive.delete(100);
    const stopped = await open(200);
    expect((await stopped.read())?.results).toEqual(range(0, 2));
    await stopped.release();
    expect((await readFile(previous.journalFile, 'utf8')).trim().split('\n')).toHaveLength(2);
    const next = await open(200);
    expect((await next.read())?.results).toEqual(range(0, 2));
    await next.save(CURSOR_B, pending([]));
    expect(existsSync(next.journalFile)).toBe(false);
    expect(await next.read()).toEqual({ cursor: CURSOR_B, results: [], unreadableResults: 0 });
  });

  it('results written into the cursor record by an older CLI are read, and move to the journal at the first save', async () => {
    alive.add(100);
    const store = await open(100);
    await writeFile(store.file, JSON.stringify({ endpoint_id: ENDPOINT, slot: 'default', cursor: CURSOR_A, pending_results: range(0, 2) }));
    await writeFile(store.journalFile, `${JSON.stringify(result(1))}\n${JSON.stringify(result(2))}\n`);
    // Both places, each result once.
    expect(await store.read()).toEqual({ cursor: CURSOR_A, results: range(0, 3), unreadableResults: 0 });
    await store.save(CURSOR_B, pending(range(0, 3)));
    expect(JSON.parse(await readFile(store.file, 'utf8'))).not.toHaveProperty('pending_results');
    expect(await store.read()).toEqual({ cursor: CURSOR_B, results: range(0, 3), unreadableResults: 0 });
  });

  it('rewrites the journal with only the pending results once it would hold four times as many lines (and at least 64 KiB)', async () => {
    alive.add(100);
    const store = await open(100);
    // A window of 3 pending results of about 1.4 KiB each slides over 200 results: one acknowledged, one added per save.
    // Every save appends one line; the journal is rewritten whole only when it passes 64 KiB (about 47 lines).
    const big = (n: number) => result(n, 1000);
    let inode = -1;
    let rewrites = 0;
    let largest = 0;
    for (let n = 0; n < 200; n++) {
      await store.save(CURSOR_A, pending([big(n), big(n + 1), big(n + 2)], n === 0 ? [big(0), big(1), big(2)] : [big(n + 2)]));
      const info = await stat(store.journalFile);
      if (info.ino !== inode) rewrites += 1;
      inode = info.ino;
      largest = Math.max(largest, info.size);
    }
    // The journal also holds results acknowledged since it was last rewritten: a restart sends those
    // again, and the server records each result id once.
    const kept = (await store.read())!.results;
    expect(kept.slice(-3)).toEqual([big(199), big(200), big(201)]);
    expect(kept.length).toBeLessThan(60);
    // The first save and each compaction: 200 appends of 1.4 KiB (280 KiB) over a 64 KiB threshold.
    expect(rewrites).toBeGreaterThanOrEqual(4);
    expect(rewrites).toBeLessThanOrEqual(6);
    expect(largest).toBeLessThan(64 * 1024 + 2 * 1500);
  });

  it('rewrites the journal at the exact save where it would reach 64 KiB with more than four lines per pending result', async () => {
    /** A result whose journal line is exactly `lineBytes` long (newline included). */
    const sized = (n: number, lineBytes: number) => {
      const r = { ...result(1000 + n), error: '' };
      return { ...r, error: 'x'.repeat(lineBytes - (JSON.stringify(r).length + 1)) };
    };
    /** A window of `window` pending results slides by one per save; the save (after the first) that rewrites the journal. */
    const rewriteAt = async (window: number, lineBytes: number): Promise<number> => {
      const store = await open(100);
      try {
        let inode = -1;
        for (let k = 0; k < 200; k++) {
          const all = Array.from({ length: window }, (_, i) => sized(k + i, lineBytes));
          await store.save(CURSOR_A, pending(all, k === 0 ? all : all.slice(-1)));
          const now = (await stat(store.journalFile)).ino;
          if (k > 0 && now !== inode) return k;
          inode = now;
        }
        return -1;
      } finally {
        await store.release();
      }
    };
    alive.add(100);
    // 3 pending lines of 1 KiB: the 61st append would bring the journal to exactly 64 KiB.
    expect(await rewriteAt(3, 1024)).toBe(61);
    // 20 pending lines of 4 KiB, over 64 KiB from the first save: rewritten once it would hold more than 80 lines.
    expect(await rewriteAt(20, 4096)).toBe(61);
  });

  it('a released store keeps a journal that still holds pending results, and removes an empty one', async () => {
    alive.add(100);
    const store = await open(100);
    await store.save(CURSOR_A, pending(range(0, 2)));
    await store.release();
    expect((await readFile(store.journalFile, 'utf8')).trim().split('\n')).toHaveLength(2);
    const next = await open(100);
    expect((await next.read())?.results).toEqual(range(0, 2));
    await next.save(CURSOR_B, pending(range(0, 2)));
    await next.save(CURSOR_B, pending([]));
    expect((await stat(next.journalFile)).size).toBe(0);
    await next.release();
    expect(existsSync(next.journalFile)).toBe(false);
  });

  it('saves with nothing pending, one after another, neither fail nor leave a journal', async () => {
    alive.add(100);
    const store = await open(100);
    for (const cursor of [CURSOR_A, CURSOR_B, CURSOR_A]) await store.save(cursor, pending([]));
    expect(existsSync(store.journalFile)).toBe(false);
    expect(await store.read()).toEqual({ cursor: CURSOR_A, results: [], unreadableResults: 0 });
    await store.release();
  });

  it('a journal that cannot be read is an error naming it, not an empty one', async () => {
    alive.add(100);
    const store = await open(100);
    await store.save(CURSOR_A);
    await mkdir(store.journalFile);
    await expect(store.read()).rejects.toThrow(`cannot read ${store.journalFile}`);
  });

  it('leaves out (and counts) stored results that are not valid', async () => {
    alive.add(100);
    const store = await open(100);
    const good = { type: 'result', message_id: CURSOR_A, status: 200, latency_ms: 1, error: null, result_id: CURSOR_B.toUpperCase() };
    const withoutId = { type: 'result', message_id: CURSOR_A, status: 200, latency_ms: 1, error: null };
    await writeFile(store.file, JSON.stringify({ cursor: CURSOR_A, pending_results: [good, withoutId, { ...good, status: 9000 }, 'x'] }));
    expect(await store.read()).toEqual({ cursor: CURSOR_A, results: [{ ...good, result_id: CURSOR_B }], unreadableResults: 3 });
    await writeFile(store.file, JSON.stringify({ cursor: CURSOR_A, pending_results: {} }));
    expect(await store.read()).toEqual({ cursor: CURSOR_A, results: [], unreadableResults: 1 });
    await writeFile(store.file, 'null');
    await expect(store.read()).rejects.toThrow(/no valid cursor/u);
  });

  it('keeps profiles apart', async () => {
    alive.add(100);
    const one = await open(100, undefined, 'default');
    const two = await open(100, undefined, 'staging');
    await one.save(CURSOR_A);
    expect(await two.read()).toBeNull();
    expect(two.slot).toBe('default');
  });

  it('refuses a damaged cursor file instead of silently starting over', async () => {
    alive.add(100);
    const store = await open(100);
    await writeFile(store.file, '{"cursor": "not-a-uuid"}');
    await expect(store.read()).rejects.toThrow(/no valid cursor/u);
    await writeFile(store.file, '{');
    await expect(store.read()).rejects.toBeInstanceOf(CliFailure);
  });
});

describe('listener slots', () => {
  it('a second listener of the same endpoint gets the next free slot, and its own cursor', async () => {
    alive.add(100).add(200).add(300);
    const first = await open(100);
    const second = await open(200);
    const third = await open(300);
    expect([first.slot, second.slot, third.slot]).toEqual(['default', '2', '3']);
    await first.save(CURSOR_A);
    await second.save(CURSOR_B);
    expect((await first.read())?.cursor).toBe(CURSOR_A);
    expect((await second.read())?.cursor).toBe(CURSOR_B);
    expect(await third.read()).toBeNull();
  });

  it('a released slot is free again, so a restart resumes its own cursor', async () => {
    alive.add(100).add(200);
    const first = await open(100);
    await first.save(CURSOR_A);
    await first.release();
    const again = await open(200);
    expect(again.slot).toBe('default');
    expect((await again.read())?.cursor).toBe(CURSOR_A);
  });

  it("takes over the slot of a listener that died without releasing it", async () => {
    alive.add(100);
    const crashed = await open(100);
    await crashed.save(CURSOR_A);
    alive.delete(100);
    alive.add(200);
    const next = await open(200);
    expect(next.slot).toBe('default');
    expect((await next.read())?.cursor).toBe(CURSOR_A);
    expect((await readFile(next.lockFile, 'utf8')).trim()).toBe('200');
    // The dead one's late release does not remove the new holder's lock.
    await crashed.release();
    expect((await readFile(next.lockFile, 'utf8')).trim()).toBe('200');
  });

  it('--name picks the slot; a name in use by a running listener is refused (exit 5)', async () => {
    alive.add(100).add(200);
    const named = await open(100, 'staging');
    expect(named.slot).toBe('staging');
    expect(named.file.endsWith(`${ENDPOINT}.staging.json`)).toBe(true);
    const error = await open(200, 'staging').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CliFailure);
    expect(error).toMatchObject({ code: 'SLOT_IN_USE', exitCode: 5 });
    await expect(open(200, '../escape')).rejects.toMatchObject({ code: 'INVALID_ARGUMENTS', exitCode: 2 });
  });

  it('listeners starting at the same moment never share a slot', async () => {
    const pids = Array.from({ length: 8 }, (_, i) => 1000 + i);
    pids.forEach((pid) => alive.add(pid));
    const stores = await Promise.all(pids.map((pid) => open(pid)));
    expect(new Set(stores.map((s) => s.slot)).size).toBe(8);
    for (const [i, store] of stores.entries()) expect((await readFile(store.lockFile, 'utf8')).trim()).toBe(String(pids[i]));
  });

  it('releaseSync removes the lock at process exit', async () => {
    alive.add(100);
    const store = await open(100);
    store.releaseSync();
    await expect(stat(store.lockFile)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('what a listener is told when its slot or cursor cannot be had', () => {
  const slotDir = () => join(configDir, 'cursors', 'default');
  const lock = async (slotFile: string, content: string) => {
    await mkdir(slotDir(), { recursive: true });
    await writeFile(join(slotDir(), `${slotFile}.lock`), content);
  };

  it('a named slot in use names the slot, the endpoint and the pid that holds it', async () => {
    alive.add(100).add(200);
    await open(100, 'staging');
    await expect(open(200, 'staging')).rejects.toMatchObject({
      message: `listener "staging" of endpoint ${ENDPOINT} is already running (pid 100)`,
      hint: 'Give this listener another --name, or leave --name out to take the first free slot.',
    });
  });

  it('a name must be 1-64 letters, digits, _ or -, starting with a letter or digit', async () => {
    for (const name of ['a/../b', 'a.b', `a${'b'.repeat(64)}`, '-a', '']) {
      await expect(open(100, name), name).rejects.toMatchObject({
        code: 'INVALID_ARGUMENTS',
        message: `invalid listener name "${name}"`,
        hint: 'A name is 1-64 letters, digits, "_" or "-", starting with a letter or digit.',
      });
    }
    expect((await open(100, `a${'b'.repeat(63)}`)).slot).toHaveLength(64);
  });

  it('there are 100 automatic slots; when all are held the listener is told to stop one or name itself', async () => {
    alive.add(999);
    await lock(`${ENDPOINT}.json`, '999');
    for (let slot = 2; slot <= 100; slot++) await lock(`${ENDPOINT}.${slot}.json`, '999');
    await expect(open(100)).rejects.toMatchObject({
      code: 'SLOT_IN_USE',
      exitCode: 5,
      message: `every listener slot of endpoint ${ENDPOINT} is in use`,
      hint: 'Stop a running listener, or name this one with --name.',
    });
    expect((await open(100, 'extra')).slot).toBe('extra');
  });

  it('a lock holding no usable pid, or this process\'s own pid, leaves the slot free', async () => {
    alive.add(0).add(100).add(-5);
    for (const content of ['', 'not a pid', '0', '-5', '100']) {
      await lock(`${ENDPOINT}.json`, content);
      const store = await open(100);
      expect(store.slot, JSON.stringify(content)).toBe('default');
      expect((await readFile(store.lockFile, 'utf8')).trim()).toBe('100');
    }
  });

  it('a lock that cannot be read is an error, not a free slot', async () => {
    const lockFile = join(slotDir(), `${ENDPOINT}.json.lock`);
    await mkdir(lockFile, { recursive: true });
    await expect(open(100)).rejects.toMatchObject({ code: 'CONFIG_ERROR', message: expect.stringMatching(new RegExp(`^cannot read ${lockFile}: EISDIR`, 'u')) });
  });

  it('waits while another process holds the slot mutex', async () => {
    const mutex = join(slotDir(), '.slots.lock');
    await mkdir(mutex, { recursive: true });
    let opened = false;
    const opening = open(100).then((store) => {
      opened = true;
      return store;
    });
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(opened).toBe(false);
    await rmdir(mutex);
    expect((await opening).slot).toBe('default');
  });

  it('takes over the slot mutex of a process that died holding it', async () => {
    const mutex = join(slotDir(), '.slots.lock');
    await mkdir(mutex, { recursive: true });
    const old = new Date(Date.now() - 60_000);
    await utimes(mutex, old, old);
    expect((await open(100)).slot).toBe('default');
    await expect(stat(mutex)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('says which directory cannot be created', async () => {
    const file = join(configDir, 'not-a-dir');
    await writeFile(file, '');
    await expect(CursorStore.open({ configDir: file, profile: 'default', endpointId: ENDPOINT, pid: 100, isAlive })).rejects.toMatchObject({
      code: 'CONFIG_ERROR',
      message: expect.stringMatching(new RegExp(`^cannot create ${join(file, 'cursors', 'default')}: ENOTDIR`, 'u')),
    });
  });

  it('says which cursor file cannot be read or holds no cursor, and how to start again', async () => {
    const store = await open(100);
    const restart = 'Delete it and start again with --since <time> (or --from-start) to choose where to resume.';
    await writeFile(store.file, '{');
    await expect(store.read()).rejects.toMatchObject({ code: 'CONFIG_ERROR', message: `${store.file} is not valid JSON`, hint: restart });
    await writeFile(store.file, '{"cursor": 42}');
    await expect(store.read()).rejects.toMatchObject({ code: 'CONFIG_ERROR', message: `${store.file} holds no valid cursor`, hint: restart });
    await rm(store.file);
    await mkdir(store.file);
    await expect(store.read()).rejects.toMatchObject({ code: 'CONFIG_ERROR', message: expect.stringMatching(new RegExp(`^cannot read ${store.file}: EISDIR`, 'u')) });
  });

  it('reads a cursor in lowercase', async () => {
    const store = await open(100);
    await store.save(CURSOR_A.toUpperCase());
    expect((await store.read())?.cursor).toBe(CURSOR_A);
  });

  it('a record of another length replaces the file rather than overwriting part of it', async () => {
    const store = await open(100);
    await store.save(CURSOR_A);
    await store.save('short');
    expect(JSON.parse(await readFile(store.file, 'utf8'))).toMatchObject({ cursor: 'short' });
    await store.save(CURSOR_B);
    expect(JSON.parse(await readFile(store.file, 'utf8'))).toMatchObject({ cursor: CURSOR_B });
  });

  it('later saves of a run write into the file itself: a reader holding it open sees them', async () => {
    const store = await open(100);
    await store.save(CURSOR_A);
    const reader = openSync(store.file, 'r');
    try {
      await store.save(CURSOR_B);
      const bytes = Buffer.alloc(4096);
      const length = readSync(reader, bytes, 0, bytes.length, 0);
      expect(JSON.parse(bytes.subarray(0, length).toString('utf8'))).toMatchObject({ cursor: CURSOR_B });
    } finally {
      closeSync(reader);
    }
  });

  it('pads a record to a multiple of 1 KiB, overwrites it in place up to a page whole, and never a file longer than a page', async () => {
    const store = await open(100);
    const at = new Date(Date.UTC(2026, 0, 1));
    /** A cursor text that makes the record need exactly `needed` bytes with its newline. */
    const cursorFor = (needed: number) => {
      const base = JSON.stringify({ endpoint_id: ENDPOINT, slot: 'default', cursor: '', updated_at: at.toISOString() }).length + 1;
      return 'c'.repeat(needed - base);
    };
    /** Whether a save reaches a reader that opened the file before it (in place) or not (a new file renamed over it). */
    const inPlace = async (cursor: string) => {
      const reader = openSync(store.file, 'r');
      try {
        await store.save(cursor, undefined, at);
        const bytes = Buffer.alloc(8192);
        const length = readSync(reader, bytes, 0, bytes.length, 0);
        return (JSON.parse(bytes.subarray(0, length).toString('utf8')) as { cursor: string }).cursor === cursor;
      } finally {
        closeSync(reader);
      }
    };
    await store.save(CURSOR_A, undefined, at);
    expect((await stat(store.file)).size).toBe(1024);
    expect(await inPlace(cursorFor(1024))).toBe(true);
    expect(await inPlace(cursorFor(1025))).toBe(false);
    expect((await stat(store.file)).size).toBe(2048);
    expect(await inPlace(cursorFor(4000))).toBe(false);
    expect((await stat(store.file)).size).toBe(4096);
    expect(await inPlace(CURSOR_B)).toBe(true);
    expect(await inPlace(cursorFor(5000))).toBe(false);
    expect((await stat(store.file)).size).toBe(5000);
    expect(await inPlace(CURSOR_B)).toBe(false);
    expect(await store.read()).toEqual({ cursor: CURSOR_B, results: [], unreadableResults: 0 });
  });

  it('a save without results writes none', async () => {
    const store = await open(100);
    await store.save(CURSOR_A);
    expect(JSON.parse(await readFile(store.file, 'utf8'))).not.toHaveProperty('pending_results');
    expect(existsSync(store.journalFile)).toBe(false);
  });

  it('a cursor file holding JSON null holds no valid cursor', async () => {
    const store = await open(100);
    await writeFile(store.file, 'null');
    await expect(store.read()).rejects.toMatchObject({ code: 'CONFIG_ERROR', message: `${store.file} holds no valid cursor` });
  });

  it.runIf(existsSync('/proc/self/fd'))('release closes the file it kept open for saves', async () => {
    const store = await open(100);
    /** How many of this process's open files are `file`. */
    const openCopies = (file = store.file) =>
      readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`) === file;
        } catch {
          return false;
        }
      }).length;
    // The lock is written and closed.
    expect(openCopies(store.lockFile)).toBe(0);
    await store.save(CURSOR_A);
    await store.save(CURSOR_B);
    expect(openCopies()).toBe(1);
    // A record of another length replaces the file: the old one is closed, the new one kept open.
    await store.save('short');
    expect(openCopies()).toBe(1);
    await store.release();
    expect(openCopies()).toBe(0);
  });

  it('a save whose temporary file cannot be written reports that error', async () => {
    const store = await open(100);
    await rm(slotDir(), { recursive: true });
    await expect(store.save(CURSOR_A)).rejects.toMatchObject({
      code: 'CONFIG_ERROR',
      message: expect.stringMatching(new RegExp(`^cannot write ${store.file}: ENOENT: no such file or directory, open `, 'u')),
    });
  });

  it('a save that cannot replace the file says so and leaves no temporary file', async () => {
    const store = await open(100);
    await mkdir(join(store.file, 'in-the-way'), { recursive: true });
    await expect(store.save(CURSOR_A)).rejects.toMatchObject({ code: 'CONFIG_ERROR', message: expect.stringMatching(new RegExp(`^cannot write ${store.file}: `, 'u')) });
    expect((await readdir(slotDir())).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('a store released twice never removes the lock of the listener that came after it', async () => {
    alive.add(100);
    const first = await open(100);
    await first.release();
    const second = await open(100);
    await first.release();
    first.releaseSync();
    expect((await readFile(second.lockFile, 'utf8')).trim()).toBe('100');

    const third = await open(200, 'other');
    third.releaseSync();
    const fourth = await open(200, 'other');
    third.releaseSync();
    await third.release();
    expect((await readFile(fourth.lockFile, 'utf8')).trim()).toBe('200');
  });

  it("releaseSync leaves another process's lock alone", async () => {
    alive.add(100);
    const crashed = await open(100);
    alive.delete(100);
    const next = await open(200);
    crashed.releaseSync();
    expect((await readFile(next.lockFile, 'utf8')).trim()).toBe('200');
  });
});

describe('processIsAlive', () => {
  it('is true for this process and false for a pid no process has', () => {
    expect(processIsAlive(process.pid)).toBe(true);
    // Above Linux's highest pid_max (2^22).
    expect(processIsAlive(0x7fff_fffe)).toBe(false);
  });
});
