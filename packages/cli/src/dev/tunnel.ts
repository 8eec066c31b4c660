import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { CliErrorCode, CliFailure } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import type { Env } from '../config.js';
import { terminateProcess } from './embedded-server.js';

/**
 * `hookrelay dev --tunnel`: an installed tunnel program, started against the embedded server's
 * ingest-only port, gives a public https address that providers can reach. What each program prints
 * is read from its own output:
 *
 * - cloudflared (`cloudflared tunnel --url http://127.0.0.1:PORT`, a quick tunnel without an
 *   account) logs on stderr a box whose second line is the address:
 *   `… INF |  Your quick Tunnel has been created! Visit it at (it may take some time to be reachable):  |`
 *   then `… INF |  https://<words>.trycloudflare.com  |`.
 * - ngrok v3 (`ngrok http http://127.0.0.1:PORT --log stdout --log-format json`) logs one JSON
 *   object per line; the line with `"msg":"started tunnel"` carries `"url":"https://…"`. The v3
 *   agent's source is not public: this follows its documented log fields.
 */

export const TUNNEL_PROGRAMS = ['cloudflared', 'ngrok'] as const;
export type TunnelProgram = (typeof TUNNEL_PROGRAMS)[number];

interface ProgramSpec {
  args(port: number): string[];
  /** The public URL in one line of the program's output, if that line carries it. */
  url(line: string, previous: string | undefined): string | undefined;
  install: string;
}

const CLOUDFLARED_BOX_LINE = /\|\s+(https:\/\/[A-Za-z0-9.-]+)\s+\|\s*$/u;
const CLOUDFLARED_BANNER = /Your quick Tunnel has been created!/u;

const PROGRAMS: Readonly<Record<TunnelProgram, ProgramSpec>> = {
  cloudflared: {
    args: (port) => ['tunnel', '--url', `http://127.0.0.1:${port}`],
    // The address is the box line right after the banner line (the disclaimer above it names other https URLs).
    url: (line, previous) => (previous !== undefined && CLOUDFLARED_BANNER.test(previous) ? CLOUDFLARED_BOX_LINE.exec(line)?.[1] : undefined),
    install:
      'Install cloudflared (https://developers.cloudflare.com/cloudflare-one/connections/connect-networks/downloads/: `brew install cloudflared`, the cloudflared .deb or .rpm, or `winget install Cloudflare.cloudflared`), or use --tunnel ngrok.',
  },
  ngrok: {
    args: (port) => ['http', `http://127.0.0.1:${port}`, '--log', 'stdout', '--log-format', 'json'],
    url: (line) => {
      if (!line.startsWith('{')) return undefined;
      try {
        const record = JSON.parse(line) as { msg?: unknown; url?: unknown };
        return record.msg === 'started tunnel' && typeof record.url === 'string' && record.url.startsWith('https://') ? record.url : undefined;
      } catch {
        return undefined;
      }
    },
    install: 'Install ngrok v3 (https://ngrok.com/download, e.g. `brew install ngrok`) and run `ngrok config add-authtoken TOKEN` once, or use --tunnel cloudflared.',
  },
};

/** How many of the program's last lines an error shows. */
const TAIL_LINES = 12;
const STOP_TIMEOUT_MS = 5_000;

export interface Tunnel {
  program: TunnelProgram;
  /** The public https base URL, without a trailing slash. */
  url: string;
  /** Stops the program (SIGTERM, SIGKILL after 5 s); safe to call more than once. */
  stop(): Promise<void>;
  /** Settles when the program has exited, whoever stopped it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** A free port on 127.0.0.1 for the ingest-only listener the tunnel points at. */
export function freeLocalPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * Starts `program` against `http://127.0.0.1:PORT` and resolves once it printed its public URL.
 * Not installed: CONFIG_ERROR with how to install it. Exits first, or prints no URL within
 * `timeoutMs`: CLI_ERROR with its last lines. The program is stopped on every failure, and when
 * this process exits however it exits.
 */
export async function startTunnel(program: TunnelProgram, port: number, env: Env, timeoutMs: number, signal?: AbortSignal): Promise<Tunnel> {
  const spec = PROGRAMS[program];
  const environment: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined) environment[name] = value;
  const child: ChildProcess = spawn(program, spec.args(port), { env: environment, stdio: ['ignore', 'pipe', 'pipe'], detached: process.platform !== 'win32' });
  const tail: string[] = [];
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, sig) => resolve({ code, signal: sig })));
  const killOnExit = (): void => void child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    process.off('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) await terminateProcess(child, closed, STOP_TIMEOUT_MS);
  };
  const lastLines = (): string => (tail.length === 0 ? '(it printed nothing)' : tail.join('\n'));

  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new CliFailure(CliErrorCode.CLI_ERROR, `${program} printed no public URL within ${Math.round(timeoutMs / 1000)} s; its last lines:\n${lastLines()}`, ExitCode.GENERIC, 'Check its output above; --tunnel-timeout gives it longer.')),
        timeoutMs,
      );
      const onAbort = (): void => reject(new CliFailure(CliErrorCode.INTERRUPTED, `stopped while ${program} started`, ExitCode.OK));
      signal?.addEventListener('abort', onAbort, { once: true });
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const reader = (): ((chunk: Buffer) => void) => {
        let partial = '';
        let previous: string | undefined;
        return (chunk) => {
          const lines = (partial + chunk.toString('utf8')).split('\n');
          partial = lines.pop() ?? '';
          for (const raw of lines) {
            const line = raw.replace(/\r$/u, '');
            tail.push(line);
            if (tail.length > TAIL_LINES) tail.shift();
            const found = spec.url(line, previous);
            previous = line;
            if (found !== undefined) {
              done();
              resolve(found.replace(/\/+$/u, ''));
            }
          }
        };
      };
      child.stdout?.on('data', reader());
      child.stderr?.on('data', reader());
      child.once('error', (error: NodeJS.ErrnoException) => {
        done();
        reject(
          error.code === 'ENOENT'
            ? new CliFailure(CliErrorCode.CONFIG_ERROR, `--tunnel ${program}: ${program} is not installed (not found on PATH)`, ExitCode.GENERIC, spec.install)
            : new CliFailure(CliErrorCode.CLI_ERROR, `--tunnel ${program}: ${program} could not be started (${error.message})`, ExitCode.GENERIC),
        );
      });
      void closed.then(({ code, signal: sig }) => {
        done();
        reject(new CliFailure(CliErrorCode.CLI_ERROR, `${program} exited (${sig ?? `code ${code}`}) before printing a public URL; its last lines:\n${lastLines()}`, ExitCode.GENERIC, spec.install));
      });
    });
    // Output after the URL is drained but not kept: a full pipe would stall the program.
    child.stdout?.resume();
    child.stderr?.resume();
    return { program, url, stop, exited: closed };
  } catch (error) {
    await stop();
    throw error;
  }
}
