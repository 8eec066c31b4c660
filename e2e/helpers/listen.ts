import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { CLI_BIN, REPO_ROOT } from './paths.js';

/** Waits (bounded) for `predicate`, polling; the message names what was awaited. */
export async function until(predicate: () => boolean, what: string, timeoutMs = 20_000, explain: () => string = () => ''): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${explain()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** One request as the local app received it. */
export interface ReceivedRequest {
  method: string;
  url: string;
  /** Header lines in order, names as sent. */
  headers: [string, string][];
  body: Buffer;
}

export type AppHandler = (request: ReceivedRequest, res: ServerResponse) => void;

/**
 * The developer's local app: a node:http server on 127.0.0.1 that records exactly what it receives.
 * It can be stopped (connections cut) and started again on the same port.
 */
export class LocalApp {
  readonly requests: ReceivedRequest[] = [];
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  private constructor(private handler: AppHandler) {}

  static async start(handler: AppHandler = (_request, res) => res.writeHead(200).end('ok')): Promise<LocalApp> {
    const app = new LocalApp(handler);
    await app.listen(0);
    return app;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  setHandler(handler: AppHandler): void {
    this.handler = handler;
  }

  private async listen(port: number): Promise<void> {
    const server = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const headers: [string, string][] = [];
        for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers.push([req.rawHeaders[i]!, req.rawHeaders[i + 1]!]);
        const received = { method: req.method ?? '', url: req.url ?? '', headers, body: Buffer.concat(chunks) };
        this.requests.push(received);
        this.handler(received, res);
      });
    });
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  /** Like an app that was shut down: the port refuses connections until `restart`. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server === undefined) return;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async restart(): Promise<void> {
    await this.listen(this.port);
  }

  async waitFor(count: number, timeoutMs = 20_000): Promise<void> {
    await until(() => this.requests.length >= count, `${count} requests at the local app (got ${this.requests.length})`, timeoutMs);
  }
}

export interface WebhookOptions {
  method?: string;
  /** After the token: `/github/push?x=1`. */
  pathAndQuery?: string;
  /** Header lines in order; repeats are sent as repeated lines. */
  headers?: [string, string][];
  body?: Buffer | string;
}

/** Posts a webhook as a provider would, with exact header lines; resolves to the stored message id. */
export function sendWebhook(ingestBase: string, token: string, options: WebhookOptions = {}): Promise<{ status: number; messageId: string }> {
  const url = new URL(`${ingestBase}/in/${token}${options.pathAndQuery ?? ''}`);
  const body = options.body === undefined ? undefined : Buffer.isBuffer(options.body) ? options.body : Buffer.from(options.body);
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of options.headers ?? []) {
    const previous = headers[name];
    headers[name] = previous === undefined ? value : [...(Array.isArray(previous) ? previous : [previous]), value];
  }
  if (body !== undefined) headers['Content-Length'] = String(body.length);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, method: options.method ?? 'POST', headers, agent: false, timeout: 15_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200) {
            reject(new Error(`ingest answered ${res.statusCode}: ${text}`));
            return;
          }
          resolve({ status: res.statusCode, messageId: (JSON.parse(text) as { data: { message_id: string } }).data.message_id });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('ingest timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

/** A JSON API call with the key (setup: create endpoints and the like). */
export async function api<T>(serverUrl: string, apiKey: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${serverUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(15_000),
  });
  const json = (await res.json()) as { data: T };
  if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json.data;
}

export interface CliEndpoint {
  id: string;
  token: string;
}

export async function createCliEndpoint(serverUrl: string, apiKey: string, extra: Record<string, unknown> = {}): Promise<CliEndpoint> {
  const data = await api<{ id: string; secret_token: string; mode: string }>(serverUrl, apiKey, 'POST', '/v1/inbound-endpoints', {
    name: `listen e2e ${Math.random().toString(16).slice(2, 8)}`,
    mode: 'cli',
    ...extra,
  });
  return { id: data.id, token: data.secret_token };
}

/** `hookrelay listen …` running as a subprocess, its output collected. */
export class ListenProcess {
  private out = '';
  private err = '';
  private exitCode: number | null | undefined;
  private readonly exited: Promise<number | null>;

  constructor(readonly child: ChildProcess) {
    child.stdout!.on('data', (chunk: Buffer) => (this.out += chunk.toString('utf8')));
    child.stderr!.on('data', (chunk: Buffer) => (this.err += chunk.toString('utf8')));
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exitCode = code ?? (signal === null ? null : 128);
        resolve(this.exitCode);
      }),
    );
  }

  get stdout(): string {
    return this.out;
  }

  get stderr(): string {
    return this.err;
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  /** The --json lines of stdout. */
  records<T = Record<string, unknown>>(): T[] {
    return this.out
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as T);
  }

  explain(): string {
    return `listener ${this.running ? 'running' : `exited ${this.exitCode}`}\nstdout:\n${this.out}\nstderr:\n${this.err}`;
  }

  async waitForStderr(pattern: RegExp, timeoutMs = 20_000): Promise<void> {
    await until(() => pattern.test(this.err), `stderr to match ${pattern}`, timeoutMs, () => this.explain());
  }

  async waitForExit(timeoutMs = 20_000): Promise<number | null> {
    const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), timeoutMs).unref());
    const result = await Promise.race([this.exited, timer]);
    if (result === 'timeout') throw new Error(`the listener did not exit within ${timeoutMs} ms\n${this.explain()}`);
    return result;
  }

  /** Ctrl-C (SIGINT) by default; resolves to the exit code. */
  async stop(signal: NodeJS.Signals = 'SIGINT', timeoutMs = 15_000): Promise<number | null> {
    if (!this.running) return this.exitCode ?? null;
    this.child.kill(signal);
    return this.waitForExit(timeoutMs);
  }

  kill(): void {
    if (this.running) this.child.kill('SIGKILL');
  }
}

export interface StartListenOptions {
  env: Record<string, string>;
  configDir: string;
  /** Working directory (where `hookrelay.json` is looked for); the repository root by default. */
  cwd?: string;
}

/** Starts `node packages/cli/bin/run.js ARGS` with a clean environment and its own config dir. */
export function startCli(args: readonly string[], options: StartListenOptions): ListenProcess {
  const child = spawn(process.execPath, [CLI_BIN, ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env: { HOOKRELAY_CONFIG_DIR: options.configDir, NO_COLOR: '1', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new ListenProcess(child);
}
