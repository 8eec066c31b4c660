import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { codeCacheDir } from '../../src/code-cache.js';

// Each run is a process of its own, as each start of the server is: within one process V8 keeps
// what it compiled and would not consult a cache for the same source twice. The runs use the
// compiled module (pnpm build), as the launcher does.
const CODE_CACHE_MODULE = fileURLToPath(new URL('../../dist/code-cache.js', import.meta.url));

type Result = { value: string; dirname: string; sep: string; exported: unknown };
interface Run {
  status: string;
  result: Result;
}

let dir: string;
let cacheDir: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'hookrelay-code-cache-'));
  cacheDir = path.join(dir, 'cache', 'hookrelay', 'code-cache');
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A CommonJS script with a shebang, like the bundle, that uses what a CommonJS module has. */
async function writeScript(value: string, name = 'bundle.cjs'): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(
    file,
    `#!/usr/bin/env node
const path = require('node:path');
module.exports = { answer: 42 };
function work(n) { let total = 0; for (let i = 0; i < n; i++) total += i; return total; }
globalThis[Symbol.for('hookrelay.test.codeCacheResult')] = { value: ${JSON.stringify(value)} + work(3), dirname: __dirname, sep: path.sep, exported: module.exports };
`,
  );
  return file;
}

/** Runs the script through runScriptWithCodeCache in a new process; `after` runs there afterwards (saveCodeCache(), …). */
function runIn(scriptFile: string, options: { flagsKey?: string; cacheDir?: string | null; after?: string } = {}): Run {
  const program = `
    import { runScriptWithCodeCache, saveCodeCache, setV8Flag } from ${JSON.stringify(CODE_CACHE_MODULE)};
    const status = runScriptWithCodeCache(${JSON.stringify({ scriptFile, cacheDir: options.cacheDir === null ? undefined : (options.cacheDir ?? cacheDir), flagsKey: options.flagsKey ?? '' })});
    ${options.after ?? ''}
    process.stdout.write(JSON.stringify({ status, result: globalThis[Symbol.for('hookrelay.test.codeCacheResult')] }));
  `;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', program], { encoding: 'utf8', timeout: 30_000 })) as Run;
}
const run = (scriptFile: string, flagsKey = '') => runIn(scriptFile, { flagsKey, after: 'saveCodeCache();' }).status;
const cacheFiles = async () => (await readdir(cacheDir).catch(() => [] as string[])).filter((name) => name.endsWith('.bin')).sort();

describe('codeCacheDir', () => {
  it('is ~/.cache/hookrelay/code-cache, and undefined without a home', () => {
    expect(codeCacheDir(() => '/home/me')).toBe(path.join('/home/me', '.cache', 'hookrelay', 'code-cache'));
    expect(codeCacheDir()).toMatch(/[/\\]\.cache[/\\]hookrelay[/\\]code-cache$/u);
    expect(codeCacheDir(() => '')).toBeUndefined();
    expect(
      codeCacheDir(() => {
        throw new Error('no home directory');
      }),
    ).toBeUndefined();
  });
});

describe('runScriptWithCodeCache', () => {
  it('runs the script as a CommonJS module, writes a cache when asked and uses it at the next start', async () => {
    const script = await writeScript('first');
    const first = runIn(script);
    expect(first).toEqual({ status: 'missing', result: { value: 'first3', dirname: dir, sep: path.sep, exported: { answer: 42 } } });
    expect(await cacheFiles()).toEqual([]); // written only when asked (once the server listens)

    expect(run(script)).toBe('missing');
    const files = await cacheFiles();
    expect(files).toHaveLength(1);
    const cacheFile = path.join(cacheDir, files[0]!);
    expect((await stat(cacheFile)).size).toBeGreaterThan(1000);
    expect((await stat(cacheFile)).mode & 0o777).toBe(0o600);
    expect((await stat(cacheDir)).mode & 0o777).toBe(0o700);

    const before = await readFile(cacheFile);
    const second = runIn(script, { after: 'saveCodeCache();' });
    expect(second).toMatchObject({ status: 'used', result: { value: 'first3' } });
    // A cache that was used is not written again.
    expect(await cacheFiles()).toEqual(files);
    expect(await readFile(cacheFile)).toEqual(before);
  });

  it('never runs a cache of other source: a changed script of the same length gets a cache of its own', async () => {
    const script = await writeScript('aaaa');
    expect(run(script)).toBe('missing');
    const [first] = await cacheFiles();

    await writeScript('bbbb'); // same length: V8's own check (the source's length) would pass
    const changed = runIn(script, { after: 'saveCodeCache();' });
    expect(changed).toMatchObject({ status: 'missing', result: { value: 'bbbb3' } });
    expect(await cacheFiles()).toHaveLength(2);
    expect(await cacheFiles()).toContain(first);
    expect(runIn(script).status).toBe('used');
  });

  it("keys the cache by the script's path: a copy elsewhere gets its own, and stack traces name the file that runs", async () => {
    const stackOf = async (scriptFile: string) => {
      const program = `
        import { runScriptWithCodeCache, saveCodeCache } from ${JSON.stringify(CODE_CACHE_MODULE)};
        const status = runScriptWithCodeCache(${JSON.stringify({ scriptFile, cacheDir, flagsKey: '' })});
        saveCodeCache();
        process.stdout.write(JSON.stringify({ status, stack: globalThis[Symbol.for('hookrelay.test.codeCacheStack')] }));
      `;
      return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', program], { encoding: 'utf8', timeout: 30_000 })) as { status: string; stack: string };
    };
    const source = `function fail() { throw new Error('where'); }
try { fail(); } catch (error) { globalThis[Symbol.for('hookrelay.test.codeCacheStack')] = error.stack; }
`;
    const first = path.join(dir, 'one', 'bundle.cjs');
    const second = path.join(dir, 'two', 'bundle.cjs');
    for (const file of [first, second]) {
      await mkdir(path.dirname(file));
      await writeFile(file, source);
    }
    expect(await stackOf(first)).toMatchObject({ status: 'missing', stack: expect.stringContaining(`at fail (${first}:`) });
    const copy = await stackOf(second);
    expect(copy.status).toBe('missing');
    expect(copy.stack).toContain(`at fail (${second}:`);
    expect(copy.stack).not.toContain(first);
    expect(await cacheFiles()).toHaveLength(2);
    for (const file of [first, second]) {
      const again = await stackOf(file);
      expect(again.status).toBe('used');
      expect(again.stack).toContain(`at fail (${file}:`);
    }
  });

  it('keys the cache by the flags given to node', async () => {
    const script = await writeScript('flags');
    expect(run(script, '--cpu-prof')).toBe('missing');
    expect(run(script, '')).toBe('missing');
    expect(run(script, '--cpu-prof')).toBe('used');
    expect(run(script, '')).toBe('used');
  });

  it('compiles anew over a damaged cache, runs the script and replaces the cache', async () => {
    const script = await writeScript('damaged');
    run(script);
    const [file] = await cacheFiles();
    const cacheFile = path.join(cacheDir, file!);
    const garbage = Buffer.alloc(4096, 7);
    await writeFile(cacheFile, garbage);

    expect(runIn(script, { after: 'saveCodeCache();' })).toMatchObject({ status: 'rejected', result: { value: 'damaged3' } });
    expect((await readFile(cacheFile)).equals(garbage)).toBe(false);
    expect(runIn(script).status).toBe('used');
  });

  it('runs without a cache when the cache dir cannot be made, and without a cache dir', async () => {
    const script = await writeScript('nowhere');
    await writeFile(path.join(dir, 'cache'), 'a file where the directory would be');
    expect(runIn(script, { after: 'saveCodeCache();' })).toMatchObject({ status: 'missing', result: { value: 'nowhere3' } });
    expect(runIn(script, { cacheDir: null, after: 'saveCodeCache();' })).toMatchObject({ status: 'off', result: { value: 'nowhere3' } });
  });

  it('keeps the four newest cache files', async () => {
    await mkdir(cacheDir, { recursive: true });
    for (let i = 0; i < 5; i++) {
      const old = path.join(cacheDir, `old-${i}.bin`);
      await writeFile(old, 'stale');
      const when = new Date(Date.now() - (10 - i) * 60_000);
      await utimes(old, when, when);
    }
    await writeFile(path.join(cacheDir, 'unrelated.txt'), 'kept');
    run(await writeScript('prune'));
    const files = await cacheFiles();
    expect(files).toHaveLength(4);
    expect(files).toEqual(expect.arrayContaining(['old-2.bin', 'old-3.bin', 'old-4.bin']));
    expect(await readdir(cacheDir)).toContain('unrelated.txt');
  });

  it('writes no cache after a V8 flag the launcher did not set (the next start would reject it), and does after one it set', async () => {
    const script = await writeScript('flag change');
    runIn(script, { after: "setV8Flag('--no-liftoff-only'); saveCodeCache();" });
    expect(await cacheFiles()).toEqual([]);
    runIn(script, { after: "setV8Flag('--liftoff-only'); saveCodeCache();" });
    expect(await cacheFiles()).toHaveLength(1);
  });
});
