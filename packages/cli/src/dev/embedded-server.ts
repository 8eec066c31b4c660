import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync, type WriteStream } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Env } from '../config.js';

/** The line the server prints on stdout once it accepts connections, with the port it really bound. */
export const LISTENING_LINE = /^hookrelay-server listening on (http:\/\/\S+)\s*$/mu;
/** How much of the server's output is kept in memory, for error messages. */
const OUTPUT_TAIL_CHARS = 8_000;

/** The `hookrelay-server` script of the installed `@hookrelay/server` package. */
export function resolveServerMain(): string {
  const require = createRequire(import.meta.url);
  const packageJson = require.resolve('@hookrelay/server/package.json');
  const pkg = JSON.parse(readFileSync(packageJson, 'utf8')) as { bin?: Record<string, string> | string };
  const bin = typeof pkg.bin === 'string' ? pkg.bin : (pkg.bin?.['hookrelay-server'] ?? './dist/bin/hookrelay-server.js');
  return join(dirname(packageJson), bin);
}

export interface EmbeddedServerOptions {
  dataDir: string;
  port: number;
  apiKey: string;
  /** Base of ingest URLs; default the server's own (`http://localhost:PORT`). */
  publicUrl?: string | undefined;
  /** A second port on 127.0.0.1 serving only the ingest URLs (for a tunnel). */
  ingestPort?: number | undefined;
  /** The CLI's environment: passed on, less what would point the server elsewhere. */
  env: Env;
  /** Where the server's output goes (truncated at each start). */
  logFile: string;
  serverMain?: string;
}

/**
 * The server's environment: the caller's (PATH, HOME, NODE_OPTIONS, …) without DATABASE_URL and
 * HOOKRELAY_* (a developer's shell must not send `dev` to a shared PostgreSQL), then the dev settings.
 * Private networks are allowed: a local forward-mode endpoint is the point of local development.
 */
export function embeddedServerEnv(options: Pick<EmbeddedServerOptions, 'dataDir' | 'port' | 'apiKey' | 'publicUrl' | 'ingestPort' | 'env'>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.env)) {
    if (value === undefined || name === 'DATABASE_URL' || name.startsWith('HOOKRELAY_')) continue;
    env[name] = value;
  }
  env.HOOKRELAY_HOST = '127.0.0.1';
  env.HOOKRELAY_PORT = String(options.port);
  env.HOOKRELAY_DATA_DIR = options.dataDir;
  env.HOOKRELAY_BOOTSTRAP_API_KEY = options.apiKey;
  env.HOOKRELAY_ALLOW_PRIVATE_NETWORKS = 'true';
  if (options.publicUrl !== undefined) env.HOOKRELAY_PUBLIC_URL = options.publicUrl;
  if (options.ingestPort !== undefined) env.HOOKRELAY_INGEST_PORT = String(options.ingestPort);
  return env;
}

/** What starts the server: its script and its environment. */
export interface ServerCommand {
  main: string;
  env: Record<string, string>;
}

export function serverCommand(options: Pick<EmbeddedServerOptions, 'dataDir' | 'port' | 'apiKey' | 'publicUrl' | 'ingestPort' | 'env' | 'serverMain'>): ServerCommand {
  return { main: options.serverMain ?? resolveServerMain(), env: embeddedServerEnv(options) };
}

export function sameServerCommand(a: ServerCommand, b: ServerCommand): boolean {
  const names = Object.keys(a.env);
  return a.main === b.main && names.length === Object.keys(b.env).length && names.every((name) => a.env[name] === b.env[name]);
}

/** What was seen of a server process before an `EmbeddedServer` took it over. */
export interface StartedServerProcess {
  output: Buffer[];
  closed?: { code: number | null; signal: NodeJS.Signals | null };
}

/** `hookrelay-server start` as a child process, for `launchEmbeddedServer` (src/dev/early-start.ts) or an early start. */
export function spawnServerProcess(command: ServerCommand): ChildProcess {
  const child = spawn(process.execPath, [command.main, 'start'], {
    env: command.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: a Ctrl-C in the terminal reaches only the CLI, which stops the
    // listener first (it may still report a result) and then the server.
    detached: true,
  });
  // An error event (spawn failure) also ends in 'close' or is reported by waitUntilListening.
  child.on('error', () => {});
  return child;
}

/** SIGTERM, then SIGKILL when `closed` has not settled after `timeoutMs`; resolves once it has. */
export async function terminateProcess(child: ChildProcess, closed: Promise<unknown>, timeoutMs: number): Promise<void> {
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([
    closed.then(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), timeoutMs);
    }),
  ]);
  clearTimeout(timer);
  if (timedOut) {
    child.kill('SIGKILL');
    await closed;
  }
}

/** Why the server did not come up, in one line, with what to do about it. */
export class EmbeddedServerError extends Error {
  override readonly name = 'EmbeddedServerError';
  constructor(
    message: string,
    readonly hint: string | undefined,
  ) {
    super(message);
  }
}

/** The most telling line of the server's output: its error message, else the last line. */
export function describeStartFailure(output: string, port: number, logFile: string): { message: string; hint: string } {
  const lines = output.split('\n').map((line) => line.trim()).filter((line) => line !== '');
  const seeLog = `The server's output is in ${logFile}.`;
  if (/EADDRINUSE/u.test(output)) {
    return { message: `port ${port} is already in use`, hint: `Stop what uses it, or pass --port with another port. ${seeLog}` };
  }
  const locked = lines.find((line) => /data dir .* is in use/u.test(line));
  if (locked !== undefined) {
    return { message: cleanLogLine(locked), hint: `Is another \`hookrelay dev\` running on it? Stop it, or pass --data-dir. ${seeLog}` };
  }
  const error = [...lines].reverse().find((line) => /error/iu.test(line)) ?? lines[lines.length - 1];
  return { message: error === undefined ? 'no output' : cleanLogLine(error), hint: seeLog };
}

/** A JSON log line's message, or the line itself. */
function cleanLogLine(line: string): string {
  try {
    const parsed = JSON.parse(line) as { msg?: unknown; err?: { message?: unknown } };
    const message = typeof parsed.err?.message === 'string' ? parsed.err.message : parsed.msg;
    if (typeof message === 'string' && message !== '') return message;
  } catch {
    // not JSON
  }
  return line.replace(/^hookrelay-server:\s*/u, '');
}

/** A running embedded server. */
export class EmbeddedServer {
  private output = '';
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly log: WriteStream;
  private readonly killOnExit = (): void => {
    // The CLI is going (even by an uncaught error or a second Ctrl-C): the server must not outlive it.
    if (this.running) this.child.kill('SIGTERM');
  };

  private constructor(
    private readonly child: ChildProcess,
    readonly options: EmbeddedServerOptions,
    started?: StartedServerProcess,
  ) {
    this.log = createWriteStream(options.logFile, { flags: 'w', mode: 0o600 });
    this.log.on('error', () => {
      // A log that cannot be written is not a reason to stop developing.
    });
    const append = (chunk: Buffer): void => {
      this.output = (this.output + chunk.toString('utf8')).slice(-OUTPUT_TAIL_CHARS);
      this.log.write(chunk);
    };
    // What an early-started server printed before the command took it over.
    started?.output.forEach(append);
    child.stdout?.on('data', append);
    child.stderr?.on('data', append);
    this.exited = new Promise((resolve) => {
      const onClose = (code: number | null, signal: NodeJS.Signals | null): void => {
        this.exitInfo = { code, signal };
        process.off('exit', this.killOnExit);
        resolve(this.exitInfo);
      };
      if (started?.closed !== undefined) onClose(started.closed.code, started.closed.signal);
      else child.once('close', onClose);
    });
    process.on('exit', this.killOnExit);
  }

  /**
   * The command's handle on a server process (`spawnServerProcess`); `started` is what an early
   * start (src/dev/early-start.ts) saw of it before the command took it over.
   */
  static of(child: ChildProcess, options: EmbeddedServerOptions, started?: StartedServerProcess): EmbeddedServer {
    return new EmbeddedServer(child, options, started);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.exitInfo === undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The server's recent output (stdout and stderr). */
  get recentOutput(): string {
    return this.output;
  }

  /**
   * Resolves to the server's URL once it prints its listening line. Rejects (EmbeddedServerError)
   * when it exits first or takes longer than `timeoutMs`; resolves to undefined when `signal`
   * aborts first (Ctrl-C while it starts).
   */
  waitUntilListening(timeoutMs: number, signal: AbortSignal): Promise<string | undefined> {
    return new Promise((resolve, reject) => {
      // An early-started server may have printed the line before the command took it over.
      let seen = this.output;
      let settled = false;
      const settle = (finish: () => void): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.child.stdout?.off('data', onData);
        signal.removeEventListener('abort', onAbort);
        finish();
      };
      const onData = (chunk: Buffer): void => {
        seen = (seen + chunk.toString('utf8')).slice(-OUTPUT_TAIL_CHARS);
        const url = LISTENING_LINE.exec(seen)?.[1];
        if (url !== undefined) settle(() => resolve(url));
      };
      const onAbort = (): void => settle(() => resolve(undefined));
      const timer = setTimeout(() => {
        settle(() =>
          reject(new EmbeddedServerError(`the embedded server did not start within ${Math.round(timeoutMs / 1000)} s`, `Its output is in ${this.options.logFile}.`)),
        );
      }, timeoutMs);
      this.child.stdout?.on('data', onData);
      signal.addEventListener('abort', onAbort, { once: true });
      void this.exited.then(({ code, signal: exitSignal }) => {
        settle(() => {
          const { message, hint } = describeStartFailure(this.output, this.options.port, this.options.logFile);
          reject(new EmbeddedServerError(`the embedded server exited (${exitSignal ?? `code ${code}`}) before listening: ${message}`, hint));
        });
      });
      if (signal.aborted) onAbort();
      const url = LISTENING_LINE.exec(seen)?.[1];
      if (url !== undefined) settle(() => resolve(url));
    });
  }

  /** SIGTERM (the server finishes in-flight work and exits 0), then SIGKILL after `timeoutMs`. */
  async stop(timeoutMs = 20_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.running) await terminateProcess(this.child, this.exited, timeoutMs);
    const info = await this.exited;
    await new Promise<void>((resolve) => this.log.end(() => resolve()));
    return info;
  }
}
