import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI_BIN, REPO_ROOT } from './paths.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunCliOptions {
  /** The whole environment of the CLI, besides HOOKRELAY_CONFIG_DIR and NO_COLOR. */
  env?: Record<string, string | undefined>;
  /** Written to the CLI's stdin, which is a pipe (never a terminal). */
  input?: string;
  /** A config dir to share between runs (login then whoami); otherwise a fresh one per run. */
  configDir?: string;
  timeoutMs?: number;
}

/** A fresh, empty config dir; remove it with `rm` when done. */
export function makeConfigDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'hookrelay-e2e-cli-'));
}

/**
 * Run `node packages/cli/bin/run.js ARGS` as a user's script would: a clean environment (nothing
 * inherited, so no HOOKRELAY_* of the developer's shell), its own config dir, stdin not a terminal.
 */
export async function runCli(args: readonly string[], options: RunCliOptions = {}): Promise<CliResult> {
  const ownConfigDir = options.configDir === undefined ? await makeConfigDir() : undefined;
  const configDir = options.configDir ?? ownConfigDir ?? '';
  try {
    const env: Record<string, string> = { HOOKRELAY_CONFIG_DIR: configDir, NO_COLOR: '1' };
    for (const [name, value] of Object.entries(options.env ?? {})) {
      if (value !== undefined) env[name] = value;
    }
    const child = spawn(process.execPath, [CLI_BIN, ...args], { cwd: REPO_ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.stdin.on('error', () => {
      // The CLI may exit without reading its input; that is not the test's concern.
    });
    child.stdin.end(options.input ?? '');
    const timeoutMs = options.timeoutMs ?? 30_000;
    const code = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`hookrelay ${args.join(' ')} did not finish within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
      }, timeoutMs);
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.once('close', (exitCode, signal) => {
        clearTimeout(timer);
        resolve(exitCode ?? (signal === null ? -1 : 128));
      });
    });
    return { code, stdout, stderr };
  } finally {
    if (ownConfigDir !== undefined) await rm(ownConfigDir, { recursive: true, force: true });
  }
}

/** Parse stdout as exactly one JSON document, with the whole result in the failure message. */
export function parseJsonOutput<T = unknown>(result: CliResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`stdout is not one JSON document (exit ${result.code})\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  }
}

/** Parse the one-line JSON error object the CLI writes to stderr under --json. */
export function parseJsonError(result: CliResult): { error: { code: string; message: string; request_id: string | null; status: number | null } } {
  try {
    return JSON.parse(result.stderr) as ReturnType<typeof parseJsonError>;
  } catch {
    throw new Error(`stderr is not one JSON document (exit ${result.code})\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  }
}
