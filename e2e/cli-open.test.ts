import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJsonOutput, runCli } from './helpers/cli.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * `hookrelay open` tells the truth about the browser: the URL is always printed, and a session
 * without a display, a PATH without xdg-open or an xdg-open that fails all say that no browser was
 * started (`opened: false`). Stand-in `xdg-open` scripts on PATH play the opener.
 */

let server: RunningServer;
let bin: string;
let env: Record<string, string>;

beforeAll(async () => {
  server = await startServer();
  bin = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-open-'));
  env = { HOOKRELAY_API_URL: server.url, HOOKRELAY_API_KEY: server.apiKey };
});
afterAll(async () => {
  await server?.stop();
  if (bin !== undefined) await rm(bin, { recursive: true, force: true });
});

/** A directory holding an `xdg-open` made of `script`, to put alone on PATH. */
async function opener(name: string, script: string): Promise<string> {
  const dir = join(bin, name);
  await mkdir(dir);
  await writeFile(join(dir, 'xdg-open'), `#!/bin/sh\n${script}\n`);
  await chmod(join(dir, 'xdg-open'), 0o755);
  return dir;
}

interface OpenJson {
  url: string;
  opened: boolean;
  reason: string | null;
}

describe('hookrelay open', () => {
  it('without DISPLAY or WAYLAND_DISPLAY: prints the URL, says no browser was started, exit 0', async () => {
    const dir = await opener('unused', `echo "$1" > "${join(bin, 'unused.txt')}"`);
    const result = await runCli(['open'], { env: { ...env, PATH: `${dir}:/usr/bin:/bin` } });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${server.url}/#key=${server.apiKey}\n`);
    expect(result.stderr).toContain('no browser was started: no graphical session (neither DISPLAY nor WAYLAND_DISPLAY is set)');
    await expect(readFile(join(bin, 'unused.txt'))).rejects.toMatchObject({ code: 'ENOENT' });
    const json = parseJsonOutput<OpenJson>(await runCli(['open', '--json'], { env }));
    expect(json).toEqual({ url: `${server.url}/#key=${server.apiKey}`, opened: false, reason: expect.stringContaining('DISPLAY') });
  });

  it('with a display but no xdg-open on PATH: opened false, naming xdg-open', async () => {
    const empty = await mkdtemp(join(bin, 'empty-'));
    const result = await runCli(['open', '--json'], { env: { ...env, DISPLAY: ':99', PATH: empty } });
    expect(result.code).toBe(0);
    expect(parseJsonOutput<OpenJson>(result)).toEqual({ url: `${server.url}/#key=${server.apiKey}`, opened: false, reason: 'xdg-open is not installed' });
  });

  it('an xdg-open that fails: opened false with its exit code, and the URL still printed', async () => {
    const dir = await opener('failing', 'echo "xdg-open: no method available for opening" >&2\nexit 3');
    const human = await runCli(['open'], { env: { ...env, DISPLAY: ':99', PATH: dir } });
    expect(human.code).toBe(0);
    expect(human.stdout).toBe(`${server.url}/#key=${server.apiKey}\n`);
    expect(human.stderr).toContain('no browser was started: xdg-open failed (exit code 3)');
    const json = parseJsonOutput<OpenJson>(await runCli(['open', '--json'], { env: { ...env, WAYLAND_DISPLAY: 'wayland-0', PATH: dir } }));
    expect(json).toMatchObject({ opened: false, reason: 'xdg-open failed (exit code 3)' });
  });

  it('an xdg-open that succeeds gets the URL: opened true', async () => {
    const seen = join(bin, 'seen.txt');
    const dir = await opener('working', `printf '%s' "$1" > "${seen}"`);
    const result = await runCli(['open', '--json'], { env: { ...env, DISPLAY: ':99', PATH: dir } });
    expect(result.code).toBe(0);
    const json = parseJsonOutput<OpenJson>(result);
    expect(json).toEqual({ url: `${server.url}/#key=${server.apiKey}`, opened: true, reason: null });
    expect(await readFile(seen, 'utf8')).toBe(json.url);
    const human = await runCli(['open'], { env: { ...env, DISPLAY: ':99', PATH: dir } });
    expect(human.stdout).toBe(`${json.url}\n`);
    expect(human.stderr).toContain('opened the inspector in your browser');
  });
});
