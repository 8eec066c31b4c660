import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { expect } from 'vitest';
import { makeConfigDir, parseJsonError, type CliResult } from './cli.js';
import { CLI_BIN, REPO_ROOT } from './paths.js';

/** The whole result, for assertion messages. */
export function explain(result: CliResult): string {
  return `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;
}

export function expectSuccess(result: CliResult): void {
  expect(result.code, explain(result)).toBe(0);
}

/** A failure under --json: the exit code, nothing on stdout, one small JSON object on stderr. */
export function expectJsonFailure(result: CliResult, exitCode: number, code: string): ReturnType<typeof parseJsonError>['error'] {
  expect(result.code, explain(result)).toBe(exitCode);
  expect(result.stdout).toBe('');
  expect(result.stderr.trim().split('\n')).toHaveLength(1);
  const { error } = parseJsonError(result);
  expect(error.code, explain(result)).toBe(code);
  return error;
}

/** The CLI's environment as runCli builds it: nothing inherited, a config dir of its own (removed with `done`), no colour. */
async function cliEnvironment(env: Record<string, string>): Promise<{ env: Record<string, string>; done: () => Promise<void> }> {
  const configDir = await makeConfigDir();
  return { env: { HOOKRELAY_CONFIG_DIR: configDir, NO_COLOR: '1', ...env }, done: () => rm(configDir, { recursive: true, force: true }) };
}

/** Like runCli, but stdout is kept as bytes (for `--body-only`). */
export async function runCliBytes(
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs = 30_000,
): Promise<{ code: number; stdout: Buffer; stderr: string }> {
  const environment = await cliEnvironment(env);
  const child = spawn(process.execPath, [CLI_BIN, ...args], { cwd: REPO_ROOT, env: environment.env, stdio: ['pipe', 'pipe', 'pipe'] });
  const stdout: Buffer[] = [];
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  child.stdin.end();
  const code = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`hookrelay ${args.join(' ')} did not finish within ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    child.once('close', (exitCode) => {
      clearTimeout(timer);
      resolve(exitCode ?? -1);
    });
  }).finally(environment.done);
  return { code, stdout: Buffer.concat(stdout), stderr };
}

/** A long-running CLI (`logs --follow`): its output so far, a way to wait for a line, and its exit. */
export interface RunningCli {
  child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** Resolves when stdout has a line matching `pattern`; rejects after `timeoutMs`. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves with the exit code (or -1 when killed by a signal). */
  exited: Promise<number>;
}

export async function startCli(args: readonly string[], env: Record<string, string>): Promise<RunningCli> {
  const environment = await cliEnvironment(env);
  const child = spawn(process.execPath, [CLI_BIN, ...args], { cwd: REPO_ROOT, env: environment.env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8');
  });
  const exited = new Promise<number>((resolve) => child.once('close', (code) => resolve(code ?? -1))).then(async (code) => {
    await environment.done();
    return code;
  });
  const waitForLine = async (pattern: RegExp, timeoutMs = 15_000): Promise<string> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = out.split('\n').find((candidate) => pattern.test(candidate));
      if (line !== undefined) return line;
      if (Date.now() > deadline) throw new Error(`no line matching ${pattern} within ${timeoutMs} ms\nstdout: ${out}\nstderr: ${err}`);
      if (child.exitCode !== null) throw new Error(`the CLI exited (${child.exitCode}) before a line matching ${pattern}\nstdout: ${out}\nstderr: ${err}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  return { child, stdout: () => out, stderr: () => err, waitForLine, exited };
}

/** Poll `check` until it returns a value (not undefined), or fail after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
