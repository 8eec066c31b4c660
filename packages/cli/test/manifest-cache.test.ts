import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildManifest, ensureFreshManifest, MANIFEST_FILE, manifestFingerprint, PACKED_FINGERPRINT, writeManifest } from '../src/manifest-cache.js';

/**
 * The manifest kept by `bin/run.js`: rebuilt whenever the compiled commands change, so that a
 * stale one never hides a command or a flag. Exercised on a throwaway oclif package whose
 * commands are plain JS files.
 */

const CLI_ROOT = fileURLToPath(new URL('..', import.meta.url));
const CORE = dirname(fileURLToPath(import.meta.resolve('@oclif/core/package.json')));

const command = (summary: string, flag: string): string => `import { Command, Flags } from '@oclif/core';
export default class C extends Command {
  static summary = ${JSON.stringify(summary)};
  static flags = { ${JSON.stringify(flag)}: Flags.string() };
  async run() {}
}
`;

let root: string;

async function writeCommand(name: string, text: string): Promise<void> {
  const path = join(root, 'dist', 'commands', `${name}.js`);
  await writeFile(path, text);
  // Two writes within one clock tick would look unchanged: move the mtime on explicitly.
  const later = new Date(Date.now() + Math.floor(Math.random() * 1_000_000));
  await utimes(path, later, later);
}

async function manifest(): Promise<{ version: string; commands: Record<string, { flags: Record<string, unknown> }> }> {
  return JSON.parse(await readFile(join(root, MANIFEST_FILE), 'utf8')) as Awaited<ReturnType<typeof manifest>>;
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'hookrelay-manifest-'));
  await mkdir(join(root, 'dist', 'commands'), { recursive: true });
  await mkdir(join(root, 'node_modules', '@oclif'), { recursive: true });
  await symlink(CORE, join(root, 'node_modules', '@oclif', 'core'), 'dir');
  await writeFile(
    join(root, 'package.json'),
    JSON.stringify({ name: 'manifest-test', version: '1.2.3', type: 'module', oclif: { bin: 't', commands: './dist/commands' } }),
  );
  await writeCommand('hello', command('say hello', 'name'));
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('ensureFreshManifest', () => {
  it('builds the manifest when there is none, then finds it fresh', async () => {
    expect(await ensureFreshManifest(root)).toBe('rebuilt');
    const built = await manifest();
    expect(built.version).toBe('1.2.3');
    expect(Object.keys(built.commands)).toEqual(['hello']);
    expect(Object.keys(built.commands.hello?.flags ?? {})).toContain('name');
    expect(await ensureFreshManifest(root)).toBe('fresh');
  });

  it('rebuilds it when a command is added or changed', async () => {
    await ensureFreshManifest(root);
    await writeCommand('bye', command('say bye', 'when'));
    expect(await ensureFreshManifest(root)).toBe('rebuilt');
    expect(Object.keys((await manifest()).commands).sort()).toEqual(['bye', 'hello']);

    // A changed file is a new fingerprint. (Its new flags are not checked here: this process
    // keeps the first import of a module; the CLI reads them in a new process.)
    await writeCommand('hello', command('say hello', 'greeting'));
    expect(await ensureFreshManifest(root)).toBe('rebuilt');
  });

  it('rebuilds it when a file beside the commands changes (flags defined in a shared module)', async () => {
    await ensureFreshManifest(root);
    await writeFile(join(root, 'dist', 'flags.js'), 'export const x = 1;\n');
    expect(await ensureFreshManifest(root)).toBe('rebuilt');
  });

  it('removes a stale manifest it cannot rebuild, so oclif loads the commands themselves', async () => {
    await ensureFreshManifest(root);
    await writeCommand('broken', 'throw new Error("does not load");\n');
    expect(await ensureFreshManifest(root)).toBe('removed');
    expect(existsSync(join(root, MANIFEST_FILE))).toBe(false);
  });

  it('uses a packed manifest as it is, whatever the files (an installed package)', async () => {
    writeManifest(root, await buildManifest(root, PACKED_FINGERPRINT));
    await writeCommand('bye', command('say bye', 'when'));
    expect(await ensureFreshManifest(root)).toBe('fresh');
    expect(Object.keys((await manifest()).commands)).toEqual(['hello']);
  });

  it('leaves no temporary files behind', async () => {
    await ensureFreshManifest(root);
    expect((await readdir(root)).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });
});

describe('manifestFingerprint of the real CLI', () => {
  it('covers the compiled CLI, @hookrelay/shared and @oclif/core', () => {
    const fingerprint = manifestFingerprint(CLI_ROOT);
    expect(fingerprint).toMatch(/^cli\/package\.json=/mu);
    expect(fingerprint).toMatch(/^cli\/commands\/endpoints\/create\.js=/mu);
    expect(fingerprint).toMatch(/^shared\/index\.js=/mu);
    expect(fingerprint).toMatch(/^core\/package\.json=/mu);
  });
});
