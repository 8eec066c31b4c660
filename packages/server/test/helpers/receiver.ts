import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TestApp } from './app.js';

/**
 * A local HTTPS receiver for delivery tests: a self-signed certificate for 127.0.0.1 (and
 * `receiver.test`) generated with `openssl` when it starts, trusted by the worker through
 * HOOKRELAY_TLS_CA_FILE = `caFile`. Each test answers on its own path.
 */
export interface Received {
  method: string;
  /** Path and query as requested. */
  url: string;
  path: string;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
  /** Date.now() when the request arrived (headers). */
  at: number;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Answer after this long. */
  delayMs?: number;
  /** Send the status and headers, then hold the body this long. */
  bodyDelayMs?: number;
  /** Never answer (until the test ends). */
  hang?: boolean;
}

export type Handler = (request: Received, index: number) => Reply;
/** Runs when a request's headers arrive; its body is not read until the promise settles. */
export type HeadersHook = (request: IncomingMessage) => void | Promise<void>;

export class Receiver {
  readonly caFile: string;
  private readonly dir: string;
  private server!: https.Server;
  private port = 0;
  private readonly handlers = new Map<string, Handler>();
  private readonly headerHooks = new Map<string, HeadersHook>();
  private readonly byPath = new Map<string, Received[]>();
  private readonly hanging = new Set<() => void>();
  private counter = 0;

  private constructor() {
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-receiver-'));
    this.caFile = path.join(this.dir, 'cert.pem');
  }

  static async start(): Promise<Receiver> {
    const receiver = new Receiver();
    const key = path.join(receiver.dir, 'key.pem');
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', key, '-out', receiver.caFile, '-days', '2', '-subj', '/CN=hookrelay-test-receiver',
      '-addext', 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:receiver.test,DNS:localhost',
    ], { stdio: 'ignore' });
    receiver.server = https.createServer({ key: readFileSync(key), cert: readFileSync(receiver.caFile) }, (req, res) => {
      const chunks: Buffer[] = [];
      const at = Date.now();
      const hook = receiver.headerHooks.get((req.url ?? '/').split('?')[0]!);
      // Not read (so not flowing) until the hook is done: the sender waits meanwhile.
      const read = () => req.on('data', (c: Buffer) => chunks.push(c));
      if (hook) Promise.resolve(hook(req)).then(read, read);
      else read();
      req.on('end', () => {
        const url = req.url ?? '/';
        const received: Received = {
          method: req.method ?? '',
          url,
          path: url.split('?')[0]!,
          headers: req.headers,
          rawHeaders: req.rawHeaders,
          body: Buffer.concat(chunks),
          at,
        };
        const list = receiver.byPath.get(received.path) ?? [];
        list.push(received);
        receiver.byPath.set(received.path, list);
        const handler: Handler = receiver.handlers.get(received.path) ?? (() => ({ status: 200, body: 'ok' }));
        const reply = handler(received, list.length - 1);
        if (reply.hang) {
          receiver.hanging.add(() => res.destroy());
          return;
        }
        const send = () => {
          if (res.destroyed) return;
          const body = reply.body ?? '';
          if (reply.bodyDelayMs) {
            res.writeHead(reply.status ?? 200, reply.headers ?? {});
            res.write(typeof body === 'string' ? body.slice(0, 1) : body.subarray(0, 1));
            setTimeout(() => res.end(), reply.bodyDelayMs);
            return;
          }
          res.writeHead(reply.status ?? 200, reply.headers ?? {});
          res.end(body);
        };
        if (reply.delayMs) setTimeout(send, reply.delayMs);
        else send();
      });
    });
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    receiver.port = (receiver.server.address() as AddressInfo).port;
    return receiver;
  }

  /** The settings of a test app that delivers here: loopback addresses allowed, this receiver's certificate trusted. */
  deliveryEnv(): Record<string, string> {
    return { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true', HOOKRELAY_TLS_CA_FILE: this.caFile };
  }

  get portNumber(): number {
    return this.port;
  }

  /** A fresh path on this receiver with its handler (and headers hook); the URL to register as an endpoint. */
  route(handler: Handler = () => ({ status: 200, body: 'ok' }), onHeaders?: HeadersHook): { path: string; url: string } {
    const routePath = `/hook-${++this.counter}`;
    this.handlers.set(routePath, handler);
    if (onHeaders) this.headerHooks.set(routePath, onHeaders);
    return { path: routePath, url: `https://127.0.0.1:${this.port}${routePath}` };
  }

  received(routePath: string): Received[] {
    return this.byPath.get(routePath) ?? [];
  }

  async waitFor(routePath: string, count: number, timeoutMs = 10_000): Promise<Received[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.received(routePath).length < count) {
      if (Date.now() > deadline) throw new Error(`receiver: ${this.received(routePath).length} of ${count} requests on ${routePath} after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return this.received(routePath);
  }

  async close(): Promise<void> {
    for (const destroy of this.hanging) destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Polls GET /v1/messages/{id} (or an inbound message) until `done` holds; returns the record. */
export async function waitForMessage(
  t: TestApp,
  id: string,
  done: (record: any) => boolean,
  options: { timeoutMs?: number; inbound?: boolean } = {},
): Promise<any> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  const url = options.inbound ? `/v1/inbound-messages/${id}` : `/v1/messages/${id}`;
  let last: any;
  for (;;) {
    const res = await t.request('GET', url);
    last = res.body?.data;
    if (res.status === 200 && done(last)) return last;
    if (Date.now() > deadline) throw new Error(`message ${id} did not settle: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export const settled = (m: any) => m.status === 'succeeded' || m.status === 'failed_permanent';
