import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI_BIN } from './helpers/paths.js';

/**
 * `hookrelay listen` in a terminal: util-linux `script` gives it a pseudo-terminal, as a developer's
 * shell does. ora, which draws the spinner, is loaded only when stderr is a terminal.
 */

let configDir: string | undefined;

afterEach(async () => {
  if (configDir) await rm(configDir, { recursive: true, force: true });
  configDir = undefined;
});

/** A loopback port that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Runs `args` of the CLI until `done(output)` or `timeoutMs`, then SIGINT; returns the output. */
async function runUntil(command: string, args: string[], env: Record<string, string>, done: (output: string) => boolean, timeoutMs = 20_000): Promise<string> {
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      if (done(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
  child.kill('SIGINT');
  const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(killer);
  return output;
}

const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

describe('hookrelay listen in a terminal', () => {
  it.skipIf(!hasScript)('shows a spinner while it cannot reach the server; without a terminal, a line per state', async () => {
    configDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-tty-'));
    const port = await closedPort();
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: configDir,
      HOOKRELAY_CONFIG_DIR: configDir,
      HOOKRELAY_API_URL: `http://127.0.0.1:${port}`,
      HOOKRELAY_API_KEY: `hr_${'0'.repeat(40)}`,
    };
    const listen = [CLI_BIN, 'listen', '01a21141-f418-7bd0-9511-162624ad3aa5', '--forward-to', '3999'];
    const reconnecting = (output: string): boolean => output.includes('reconnecting in');

    // A pseudo-terminal of 100 columns (script's own size is 0 without a terminal around it).
    const inner = `stty cols 100 rows 30; exec ${[process.execPath, ...listen].map((word) => `'${word}'`).join(' ')}`;
    const terminal = await runUntil('script', ['-qefc', inner, '/dev/null'], env, reconnecting);
    // The spinner shows the latest state once the wait passes a quarter second: by then an attempt
    // has failed. Which one depends on how fast the machine starts the CLI (on a loaded machine the
    // first wait of 1 s may pass before the first frame), so any step of the backoff will do.
    expect(terminal).toMatch(new RegExp(`reconnecting in \\d+s \\(could not reach http://127\\.0\\.0\\.1:${port}`));
    // ora's frames (the dots spinner), drawn over one line; the cursor hidden while it spins.
    expect(terminal).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/u);
    expect(terminal).toContain('\u001b[?25l');

    const piped = await runUntil(process.execPath, listen, env, reconnecting);
    expect(piped).toContain(`connecting to http://127.0.0.1:${port} (websocket)`);
    expect(piped).toContain('reconnecting in');
    expect(piped).not.toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/u);
    expect(piped).not.toContain('\u001b[?25l');
  });
});
