import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseContentCoding, inspectorRoutes } from '../../src/routes/inspector.js';

/**
 * The inspector's assets in the codings the build wrote them in, chosen by Accept-Encoding: a page
 * dir made here, with a script that has both copies and a stylesheet that has none.
 */
let dir: string;
let app: FastifyInstance;
const script = Buffer.from(`console.log(${JSON.stringify('inspector '.repeat(500))});\n`);
const style = Buffer.from('body { color: black; }\n');

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hookrelay-inspector-assets-'));
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'index.html'), '<!doctype html><script type="module" src="assets/main-A.js"></script>');
  writeFileSync(join(dir, 'assets', 'main-A.js'), script);
  writeFileSync(join(dir, 'assets', 'main-A.js.br'), brotliCompressSync(script));
  writeFileSync(join(dir, 'assets', 'main-A.js.gz'), gzipSync(script));
  writeFileSync(join(dir, 'assets', 'main-B.css'), style);
  app = Fastify();
  await app.register(inspectorRoutes, { dir });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const get = (url: string, acceptEncoding?: string) =>
  app.inject({ method: 'GET', url, headers: acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding } });

describe('the inspector assets', () => {
  it.each([
    ['br', 'br'],
    ['gzip, deflate, br', 'br'],
    ['gzip', 'gzip'],
    ['br;q=0.5, gzip', 'gzip'],
    ['br;q=0, gzip;q=0.1', 'gzip'],
    ['*', 'br'],
    ['*;q=0.2, br;q=0', 'gzip'],
  ])('Accept-Encoding %j: %s, whose decompressed bytes are the asset', async (accept, coding) => {
    const res = await get('/assets/main-A.js', accept);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-encoding']).toBe(coding);
    expect(res.headers.vary).toBe('accept-encoding');
    expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const raw = res.rawPayload;
    expect(Number(res.headers['content-length'])).toBe(raw.length);
    expect(raw.length).toBeLessThan(script.length);
    expect((coding === 'br' ? brotliDecompressSync(raw) : gunzipSync(raw)).equals(script)).toBe(true);
  });

  it.each([undefined, '', 'identity', 'deflate', 'br;q=0, gzip;q=0', 'gzip;q=x, br;q=', '*;q=0', 'constructor, __proto__, toString'])(
    'Accept-Encoding %j: the bytes as they are',
    async (accept) => {
      const res = await get('/assets/main-A.js', accept);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-encoding']).toBeUndefined();
      expect(res.headers.vary).toBe('accept-encoding');
      expect(res.rawPayload.equals(script)).toBe(true);
    },
  );

  it('an asset without copies is sent as it is; the copies are not assets of their own', async () => {
    const css = await get('/assets/main-B.css', 'br, gzip');
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-encoding']).toBeUndefined();
    expect(css.rawPayload.equals(style)).toBe(true);
    // The copies are served only as the coding of their asset (no AppError handler here: any refusal).
    expect((await get('/assets/main-A.js.br')).statusCode).not.toBe(200);
    expect((await get('/assets/main-A.js.gz')).statusCode).not.toBe(200);
  });
});

describe('chooseContentCoding', () => {
  it('takes the highest weight among the codings there are copies in, brotli first on a tie', () => {
    expect(chooseContentCoding('gzip;q=1, br;q=0.9', ['br', 'gzip'])).toBe('gzip');
    expect(chooseContentCoding('GZIP, BR', ['br', 'gzip'])).toBe('br');
    expect(chooseContentCoding(' br ; q=0.001 ', ['br', 'gzip'])).toBe('br');
    expect(chooseContentCoding('br', ['gzip'])).toBeUndefined();
    expect(chooseContentCoding('br', [])).toBeUndefined();
    expect(chooseContentCoding(`${'x,'.repeat(4000)}gzip`, ['br', 'gzip'])).toBe('gzip');
  });
});
