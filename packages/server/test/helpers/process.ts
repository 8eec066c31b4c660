import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The built server entry: tests of real processes run what operators run. */
export const SERVER_MAIN = fileURLToPath(new URL('../../dist/bin/hookrelay-server.js', import.meta.url));

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  /** The JSON log lines at level error or fatal not yet checked by `stop()`, as written. */
  errorLines: () => string[];
  /**
   * SIGTERM, then SIGKILL after `graceMs`; resolves to the exit code (null when killed). Throws when
   * the server logged a line at level error or fatal that `expectedErrorLogs` does not allow.
   */
  stop(graceMs?: number): Promise<number | null>;
}

export interface ServerProcessOptions {
  /**
   * Messages (`msg`) of error-level log lines the test causes on purpose (a database it stops, a
   * process it kills). Any other line at level error or fatal fails the test at `stop()`: nothing a
   * client sends may make the server log one.
   */
  expectedErrorLogs?: readonly RegExp[];
}

/** Log lines at level error or fatal in `lines` whose message none of `expected` matches. */
export function unexpectedErrorLines(lines: readonly string[], expected: readonly RegExp[] = []): string[] {
  return lines.filter((line) => {
    let msg = '';
    try {
      msg = String((JSON.parse(line) as { msg?: unknown }).msg ?? '');
    } catch {
      // A line cut short is still an error line.
    }
    return !expected.some((pattern) => pattern.test(msg));
  });
}

/** Collects, from a stream of stdout chunks, the JSON log lines at level error or fatal. */
export function errorLineCollector(): { push(chunk: string): void; lines: string[] } {
  let partial = '';
  const lines: string[] = [];
  return {
    lines,
    push(chunk) {
      const parts = (partial + chunk).split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        if (!line.startsWith('{')) continue;
        const level = /"level":"(\w+)"/.exec(line);
        if (level && (level[1] === 'error' || level[1] === 'fatal')) lines.push(line);
      }
    },
  };
}

/** Starts `hookrelay-server start` and waits (bounded) for its `listening on` line. */
export async function startServerProcess(env: Record<string, string>, timeoutMs = 60_000, options: ServerProcessOptions = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, [SERVER_MAIN, 'start'], {
    env: { PATH: process.env.PATH ?? '', HOOKRELAY_PORT: '0', HOOKRELAY_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const errors = errorLineCollector();
  child.stdout!.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    out += text;
    errors.push(text);
  });
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in ${timeoutMs} ms\nstdout: ${out}\nstderr: ${err}`)), timeoutMs);
    const check = () => {
      const match = /hookrelay-server listening on (http:\/\/\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening\nstdout: ${out}\nstderr: ${err}`));
    });
  });
  return {
    child,
    url,
    stdout: () => out,
    stderr: () => err,
    errorLines: () => [...errors.lines],
    async stop(graceMs = 15_000) {
      let code = child.exitCode;
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        code = await exited;
        clearTimeout(timer);
      }
      const unexpected = unexpectedErrorLines(errors.lines.splice(0), options.expectedErrorLogs);
      if (unexpected.length > 0) throw new Error(`the server logged ${unexpected.length} unexpected line(s) at level error or fatal:\n${unexpected.join('\n')}`);
      return code;
    },
  };
}
