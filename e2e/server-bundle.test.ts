import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SERVER_MAIN } from './helpers/paths.js';

let dataDir: string | undefined;

afterEach(async () => {
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
  dataDir = undefined;
});

/**
 * Starts the bundled server program on the embedded database with Node's module debug log on
 * (every CommonJS module it loads, with its path), stops it at its listening line and returns that log.
 */
async function moduleLogOfStart(): Promise<string> {
  dataDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-bundle-'));
  const child = spawn(process.execPath, [SERVER_MAIN, 'start', '--port', '0', '--data-dir', dataDir], {
    env: { PATH: process.env.PATH ?? '', NODE_DEBUG: 'module', HOOKRELAY_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no listening line within 60 s; stdout: ${stdout.slice(-2000)}`)), 60_000);
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.includes('hookrelay-server listening on')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the server exited (${code}) before listening; stderr: ${stderr.slice(-2000)}`));
      });
    });
  } finally {
    child.kill('SIGKILL');
    await new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once('exit', resolve)));
  }
  return stderr;
}

describe('the bundled server program', () => {
  it('starts on the embedded database without loading the AWS SDK (only an s3:// payload store needs it)', async () => {
    const log = await moduleLogOfStart();
    // The log is live: it names the CommonJS modules the bundle requires (Node's own among them).
    expect(log).toMatch(/Module\._load REQUEST/u);
    expect(log).not.toMatch(/@aws-sdk|@smithy/u);
  });
});
