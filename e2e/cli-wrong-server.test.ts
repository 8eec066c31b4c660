import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJsonError, runCli } from './helpers/cli.js';
import { startHttpsReceiver, type HttpsReceiver } from './helpers/https-receiver.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * The CLI pointed at something that is not the hookrelay API: a real hookrelay server behind a base
 * address with a path in it (`…/v1`, `…/api`: its ROUTE_NOT_FOUND), a web server answering a wrong
 * path with an HTML 404, `https://` against plain HTTP, `http://` against TLS. Each is a
 * configuration failure (exit 1, CONFIG_ERROR) with a sentence naming the fix, never "not found" (exit 4).
 */

const KEY = `hr_${'0'.repeat(40)}`;
let plain: Server;
let plainUrl: string;
let tls: HttpsReceiver;
let hookrelay: RunningServer;

beforeAll(async () => {
  plain = createServer((req, res) => {
    if (req.url?.startsWith('/json/')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"hello":"world"}');
      return;
    }
    res.writeHead(404, { 'content-type': 'text/html' });
    res.end('<html><body><h1>404 Not Found</h1></body></html>');
  });
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  plainUrl = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`;
  tls = await startHttpsReceiver();
  hookrelay = await startServer();
});
afterAll(async () => {
  plain?.closeAllConnections();
  await new Promise<void>((resolve) => (plain ? plain.close(() => resolve()) : resolve()));
  await tls?.stop();
  await hookrelay?.stop();
});

describe('a hookrelay server at a base address with a path in it', () => {
  const sentence = (apiUrl: string): string =>
    `${apiUrl} is not the hookrelay API's base address (HOOKRELAY_API_URL should be the server's root, e.g. http://127.0.0.1:8787, without /v1)`;

  it('…/v1 and …/api: CONFIG_ERROR, exit 1, the sentence and the path the server was asked for, with a valid key or none', async () => {
    for (const suffix of ['/v1', '/api']) {
      const apiUrl = `${hookrelay.url}${suffix}`;
      for (const key of [hookrelay.apiKey, KEY]) {
        const result = await runCli(['endpoints', 'get', `ep_${'0'.repeat(32)}`], { env: { HOOKRELAY_API_URL: apiUrl, HOOKRELAY_API_KEY: key } });
        expect(result.code, `${apiUrl}: ${result.stderr}`).toBe(1);
        expect(result.stdout).toBe('');
        expect(result.stderr).toContain(`CONFIG_ERROR: ${sentence(apiUrl)} (request id `);
        expect(result.stderr).toMatch(new RegExp(`hint: The server answered "no route for GET ${suffix}/v1/endpoints/ep_0+"\\. Set --api-url / HOOKRELAY_API_URL`, 'u'));
      }
    }
  });

  it('the same under --json, with the status and request id of the server, for a wait and for listen too', async () => {
    const env = { HOOKRELAY_API_URL: `${hookrelay.url}/v1`, HOOKRELAY_API_KEY: hookrelay.apiKey };
    const endpointId = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70';
    for (const args of [['whoami'], ['inbound', 'messages', 'wait', endpointId, '--timeout', '10s'], ['listen', endpointId, '--forward-to', '3000']]) {
      const result = await runCli([...args, '--json'], { env });
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(1);
      expect(result.stdout).toBe('');
      expect(parseJsonError(result).error, args.join(' ')).toMatchObject({ code: 'CONFIG_ERROR', message: sentence(env.HOOKRELAY_API_URL), status: 404, request_id: expect.stringMatching(/^[0-9a-f-]{36}$/u) });
    }
    // The root itself is the API: the same key works there.
    const root = await runCli(['whoami', '--json'], { env: { ...env, HOOKRELAY_API_URL: hookrelay.url } });
    expect(root.code, root.stderr).toBe(0);
  });
});

describe('a server that is not the hookrelay API', () => {
  it('an HTML 404 from a wrong path: CONFIG_ERROR, exit 1, the sentence about the path', async () => {
    const result = await runCli(['endpoints', 'get', `ep_${'0'.repeat(32)}`], { env: { HOOKRELAY_API_URL: `${plainUrl}/wrong/prefix`, HOOKRELAY_API_KEY: KEY } });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(`CONFIG_ERROR: ${plainUrl}/wrong/prefix does not answer as a hookrelay API (check the URL's path)`);
    expect(result.stderr).toContain('HTTP 404, text/html');
    expect(result.stderr).toMatch(/hint: .*HOOKRELAY_API_URL/u);
  });

  it('a 200 JSON answer without the envelope is the same failure, also under --json', async () => {
    const result = await runCli(['whoami', '--json'], { env: { HOOKRELAY_API_URL: `${plainUrl}/json`, HOOKRELAY_API_KEY: KEY } });
    expect(result.code).toBe(1);
    const error = parseJsonError(result).error;
    expect(error.code).toBe('CONFIG_ERROR');
    expect(error.message).toContain("does not answer as a hookrelay API (check the URL's path)");
    expect(error.message).toContain('HTTP 200');
  });

  it('https:// against a plain-HTTP server names http:// as the fix', async () => {
    const httpsUrl = plainUrl.replace('http:', 'https:');
    const result = await runCli(['whoami'], { env: { HOOKRELAY_API_URL: httpsUrl, HOOKRELAY_API_KEY: KEY } });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`CONFIG_ERROR: ${httpsUrl} answers plain HTTP, not HTTPS: use ${plainUrl} (http://, not https://)`);
    expect(result.stderr).not.toMatch(/SSL routines|wrong version number/u);
  });

  it('http:// against a TLS server names https:// as the fix', async () => {
    const httpUrl = tls.url.replace('https:', 'http:');
    const result = await runCli(['whoami', '--json'], { env: { HOOKRELAY_API_URL: httpUrl, HOOKRELAY_API_KEY: KEY } });
    expect(result.code).toBe(1);
    expect(parseJsonError(result).error).toMatchObject({
      code: 'CONFIG_ERROR',
      message: `${httpUrl} expects HTTPS: use ${tls.url} (https://, not http://)`,
      status: null,
    });
  });

  it('nothing listening stays a network failure (exit 7)', async () => {
    const result = await runCli(['whoami'], { env: { HOOKRELAY_API_URL: 'http://127.0.0.1:1', HOOKRELAY_API_KEY: KEY } });
    expect(result.code).toBe(7);
    expect(result.stderr).toContain('NETWORK_ERROR');
  });
});
