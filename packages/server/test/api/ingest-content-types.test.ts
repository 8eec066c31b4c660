import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPull } from '../helpers/pull.js';

/** Any Content-Type is a webhook's (docs/api.md, Ingestion): stored as received, with its exact bytes. */

let t: TestApp;
let baseUrl: string;
beforeAll(async () => {
  t = await createTestApp();
  baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await t?.close();
});

/** A POST over a real socket with a Content-Type header exactly as given (latin1 bytes). */
function post(path: string, contentType: string, body: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${baseUrl}${path}`, { method: 'POST', headers: { 'content-type': contentType, 'content-length': body.length } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('ingestion takes any Content-Type', () => {
  it.each([['a'], ['application/json, text/html'], ['text/plain; charset'], ['x y'], ['\tapplication/json'], ['caf\u00e9/x'], ['application/json; charset=utf-8; boundary']])(
    'stores a webhook sent with Content-Type %j, as received',
    async (contentType) => {
      const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'types', mode: 'cli' } });
      const { id, secret_token: token } = res.body.data;
      const body = Buffer.from('{"any":"bytes"}');
      const answer = await post(`/in/${token}`, contentType, body);
      expect(answer.status, answer.text).toBe(200);
      const [row] = await t.db.sql<{ content_type: string; size_bytes: number }>`SELECT content_type, size_bytes FROM inbound_messages WHERE inbound_endpoint_id = ${id}`;
      // Node hands header values over without their surrounding whitespace.
      expect(row).toEqual({ content_type: contentType.trim(), size_bytes: body.length });
    },
  );

  it('at a pull endpoint too', async () => {
    const endpoint = await createPull(t);
    const answer = await post(endpoint.path, 'application/json, text/html', Buffer.from('{"n":1}'));
    expect(answer.status, answer.text).toBe(200);
    const [row] = await t.db.sql<{ content_type: string }>`SELECT content_type FROM pull_events WHERE endpoint_id = ${endpoint.id}`;
    expect(row).toEqual({ content_type: 'application/json, text/html' });
  });
});
