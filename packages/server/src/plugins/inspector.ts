import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { notFound } from '../errors.js';

/**
 * Headers of every inspector response. The page runs only its own script (no inline script, no
 * eval), talks only to this origin (the /v1 API and its WebSockets), cannot be framed, and sends no
 * Referer: nothing on the page can carry data or the key elsewhere.
 */
export const INSPECTOR_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
};

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.map': 'application/json; charset=utf-8',
};

interface Asset {
  type: string;
  bytes: Buffer;
}

/**
 * Where `pnpm build` puts the page: dist/ui beside the compiled server, or (when the server runs
 * from its TypeScript sources, as in its tests) the package's dist/ui.
 */
export function inspectorDir(): string | undefined {
  const candidates = [new URL('../ui/', import.meta.url), new URL('../../dist/ui/', import.meta.url)];
  for (const candidate of candidates) {
    const dir = fileURLToPath(candidate);
    if (existsSync(join(dir, 'index.html'))) return dir;
  }
  return undefined;
}

function loadAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  const assetsDir = join(dir, 'assets');
  for (const name of existsSync(assetsDir) ? readdirSync(assetsDir) : []) {
    const type = TYPES[name.slice(name.lastIndexOf('.'))];
    if (type) assets.set(name, { type, bytes: readFileSync(join(assetsDir, name)) });
  }
  return assets;
}

/**
 * The inspector: a single page at `/` and its hashed, immutable assets under `/assets/`, held in
 * memory. Navigation inside the page uses the fragment, so no other path is needed. Without a built
 * page (`pnpm build` not run) `/` answers 404 saying so.
 */
export async function inspectorRoutes(app: FastifyInstance, options: { dir?: string | undefined }): Promise<void> {
  const dir = options.dir ?? inspectorDir();
  const index = dir === undefined ? undefined : readFileSync(join(dir, 'index.html'));
  const assets = dir === undefined ? new Map<string, Asset>() : loadAssets(dir);

  // On errors too (an unknown asset): every response of the page's paths carries them.
  app.addHook('onSend', async (_request, reply) => {
    reply.headers(INSPECTOR_HEADERS);
  });
  const send = (reply: FastifyReply, asset: Asset, cache: string) => reply.header('cache-control', cache).type(asset.type).send(asset.bytes);

  app.get('/', async (_request, reply) => {
    if (index === undefined) throw notFound('inspector page', '/ (run pnpm build to build it)');
    return send(reply, { type: TYPES['.html']!, bytes: index }, 'no-cache');
  });

  app.get<{ Params: { name: string } }>('/assets/:name', async (request, reply) => {
    const asset = assets.get(request.params.name);
    if (!asset) throw notFound('asset', request.params.name);
    // Names carry a hash of their content (see packages/server/ui/build.mjs).
    return send(reply, asset, 'public, max-age=31536000, immutable');
  });
}
