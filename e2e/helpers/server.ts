import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, SERVER_MAIN } from './paths.js';

export interface RunningServer {
  /** `http://127.0.0.1:PORT`, as printed by the server. */
  url: string;
  /** The bootstrap key of project `default`. */
  apiKey: string;
  dataDir: string;
  /** The server process's pid (its memory is read from /proc). */
  pid: number;
  /** The server's stdout and stderr so far (the tail), for failure messages. */
  logs(): string;
  /**
   * SIGTERM, then SIGKILL if it has not exited in time; then the data dir is removed (unless given by
   * the caller). Throws when the server logged a line at level error or fatal that `expectedErrorLogs`
   * does not allow.
   */
  stop(): Promise<void>;
  /** SIGKILL, as a crash: nothing is cleaned up, the data dir is kept. Checks the log as `stop` does. */
  kill(): Promise<void>;
}

export interface StartServerOptions {
  /** Extra environment for the server (on top of the test defaults). */
  env?: Record<string, string>;
  /** How long to wait for the `listening on` line. PGlite's first start takes a few seconds. */
  startTimeoutMs?: number;
  stopTimeoutMs?: number;
  /** The bootstrap key (default: a fresh one); servers sharing a database must share it. */
  apiKey?: string;
  /** An existing data dir (a restart); the caller removes it. Only one server may use it at a time. */
  dataDir?: string;
  /**
   * Messages (`msg`) of error-level log lines the test causes on purpose. Any other line at level error
   * or above fails the test at `stop()`/`kill()`: nothing a client sends may make the server log one.
   */
  expectedErrorLogs?: readonly RegExp[];
}

const LISTENING_LINE = /^hookrelay-server listening on (http:\/\/\S+)\s*$/mu;
const LOG_TAIL_CHARS = 20_000;

/** Collects the JSON log lines at level error or fatal from a stream of stdout chunks. */
function errorLineCollector(): { push(chunk: string): void; take(expected: readonly RegExp[]): string[] } {
  let partial = '';
  let lines: string[] = [];
  return {
    push(chunk) {
      const parts = (partial + chunk).split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        const level = line.startsWith('{') ? /"level":"(\w+)"/.exec(line) : null;
        if (level && (level[1] === 'error' || level[1] === 'fatal')) lines.push(line);
      }
    },
    /** The lines none of `expected` allows, each reported once. */
    take(expected) {
      const taken = lines;
      lines = [];
      return taken.filter((line) => {
        let msg = '';
        try {
          msg = String((JSON.parse(line) as { msg?: unknown }).msg ?? '');
        } catch {
          // A line cut short is still an error line.
        }
        return !expected.some((pattern) => pattern.test(msg));
      });
    },
  };
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function waitForExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (exited(child)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.off('exit', onExit);
      resolve(false);
    }, timeoutMs);
    const onExit = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    child.once('exit', onExit);
  });
}

/**
 * Start the real server (`node packages/server/dist/bin/hookrelay-server.js start`) on a free port, on the embedded
 * PGlite backend in a fresh data dir, with a known bootstrap key. Nothing of the caller's
 * environment is passed on, so a developer's DATABASE_URL or HOOKRELAY_* cannot leak in.
 */
export async function startServer(options: StartServerOptions = {}): Promise<RunningServer> {
  if (!existsSync(SERVER_MAIN)) {
    throw new Error(`${SERVER_MAIN} does not exist: build first (pnpm build)`);
  }
  const ownDataDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'hookrelay-e2e-')));
  const apiKey = options.apiKey ?? `hr_${randomBytes(20).toString('hex')}`;
  const child = spawn(process.execPath, [SERVER_MAIN, 'start'], {
    cwd: REPO_ROOT,
    env: {
      HOOKRELAY_PORT: '0',
      HOOKRELAY_HOST: '127.0.0.1',
      HOOKRELAY_DATA_DIR: dataDir,
      HOOKRELAY_BOOTSTRAP_API_KEY: apiKey,
      HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'false',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });

  // Both pipes are drained for the whole run: a full pipe would block the server's logging.
  let output = '';
  const append = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-LOG_TAIL_CHARS);
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const errorLines = errorLineCollector();
  child.stdout?.on('data', (chunk: Buffer) => errorLines.push(chunk.toString('utf8')));
  const checkErrorLines = (): void => {
    const unexpected = errorLines.take(options.expectedErrorLogs ?? []);
    if (unexpected.length > 0) throw new Error(`the server logged ${unexpected.length} unexpected line(s) at level error or fatal:\n${unexpected.join('\n')}`);
  };
  let stdoutSeen = '';
  const stop = async (): Promise<void> => {
    if (!exited(child)) {
      child.kill('SIGTERM');
      if (!(await waitForExit(child, options.stopTimeoutMs ?? 10_000))) {
        child.kill('SIGKILL');
        await waitForExit(child, 5_000);
      }
    }
    if (ownDataDir) await rm(dataDir, { recursive: true, force: true });
    checkErrorLines();
  };
  const kill = async (): Promise<void> => {
    if (!exited(child)) {
      child.kill('SIGKILL');
      await waitForExit(child, 5_000);
    }
    checkErrorLines();
  };

  const url = await new Promise<string>((resolve, reject) => {
    const timeoutMs = options.startTimeoutMs ?? 60_000;
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`the server did not print its listening line within ${timeoutMs} ms; output:\n${output}`));
    }, timeoutMs);
    const onStdout = (chunk: Buffer): void => {
      stdoutSeen = (stdoutSeen + chunk.toString('utf8')).slice(-LOG_TAIL_CHARS);
      const match = LISTENING_LINE.exec(stdoutSeen);
      if (match?.[1] !== undefined) {
        cleanup();
        resolve(match[1]);
      }
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      cleanup();
      reject(new Error(`the server exited (code ${code}, signal ${signal}) before listening; output:\n${output}`));
    };
    const cleanup = (): void => {
      clearTimeout(timer);
      child.stdout?.off('data', onStdout);
      child.off('exit', onExit);
    };
    child.stdout?.on('data', onStdout);
    child.once('exit', onExit);
  }).catch(async (error: unknown) => {
    // The start's own failure is the one to report (its output holds any error lines).
    await stop().catch(() => {});
    throw error;
  });

  return { url, apiKey, dataDir, pid: child.pid!, logs: () => output, stop, kill };
}
