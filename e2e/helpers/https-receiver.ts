import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The HTML a `/markup…` path answers with: a page that shows it must run none of it. */
export const MARKUP_BODY = `<img src=x onerror="alert('response body')"><script>alert('response body')</script>`;

/** One request the receiver got. */
export interface ReceivedDelivery {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export interface HttpsReceiver {
  /** `https://127.0.0.1:PORT`. */
  url: string;
  /** The self-signed certificate, for the server's HOOKRELAY_TLS_CA_FILE. */
  caFile: string;
  /** Every request so far, oldest first. */
  received: ReceivedDelivery[];
  stop(): Promise<void>;
}

/**
 * A local HTTPS receiver for outbound deliveries in e2e tests (the server delivers to https:// URLs
 * only): a self-signed certificate for 127.0.0.1 made with `openssl`, trusted by the server through
 * HOOKRELAY_TLS_CA_FILE. It answers 2xx on `/ok…` paths, 500 with MARKUP_BODY on `/markup…` paths
 * and 500 on anything else, so a test picks success or failure by the endpoint's URL.
 */
export async function startHttpsReceiver(): Promise<HttpsReceiver> {
  const dir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-receiver-'));
  const keyFile = join(dir, 'key.pem');
  const caFile = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', keyFile, '-out', caFile, '-days', '1', '-subj', '/CN=hookrelay-e2e-receiver',
      '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  );
  const received: ReceivedDelivery[] = [];
  const server: Server = createServer({ key: await readFile(keyFile), cert: await readFile(caFile) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      received.push({ method: req.method ?? '', path, headers: req.headers, body: Buffer.concat(chunks) });
      if (path.startsWith('/markup')) {
        res.writeHead(500, { 'content-type': 'text/html' }).end(MARKUP_BODY);
        return;
      }
      res.writeHead(path.startsWith('/ok') ? 200 : 500, { 'content-type': 'text/plain' });
      res.end(path.startsWith('/ok') ? 'thanks' : 'receiver says no');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    caFile,
    received,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
