import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A stand-in for the API on 127.0.0.1 that answers as the test says: stalls, trickles, hostile text. */
export interface StubApi {
  url: string;
  /** Every request as `METHOD /path?query`, in arrival order. */
  requests: string[];
  stop(): Promise<void>;
}

export type StubHandler = (req: IncomingMessage, res: ServerResponse) => void;

export async function startStubApi(handler: StubHandler): Promise<StubApi> {
  const requests: string[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    handler(req, res);
  });
  // A stalled answer must not keep the server from closing.
  server.on('close', () => timers.forEach(clearInterval));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Takes the request and never answers. */
export const hang: StubHandler = () => {};

/**
 * Answers 200 with the start of a JSON envelope, then one space every `everyMs` for ever: each byte
 * restarts a per-read idle timeout, so only a deadline for the whole request ends it.
 */
export function trickle(everyMs = 500): StubHandler {
  return (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"data":');
    const timer = setInterval(() => res.write(' '), everyMs);
    const stop = (): void => clearInterval(timer);
    res.once('close', stop);
    req.socket.once('close', stop);
  };
}

/** The API's envelope for `data`. */
export function answer(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
