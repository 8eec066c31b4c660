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

/**
 * Headers of the customer portal's page (`/portal`): the inspector's, except that the origins in
 * HOOKRELAY_PORTAL_FRAME_ANCESTORS may show it in a frame (docs/portal.md, Embedding). With none,
 * it cannot be framed at all, as the inspector.
 */
export function portalHeaders(frameAncestors: readonly string[]): Readonly<Record<string, string>> {
  const csp = INSPECTOR_HEADERS['content-security-policy']!.replace("frame-ancestors 'none'", `frame-ancestors ${frameAncestors.length === 0 ? "'none'" : frameAncestors.join(' ')}`);
  const { 'x-frame-options': deny, ...rest } = INSPECTOR_HEADERS;
  // X-Frame-Options names no list of origins: it stays DENY only where nothing may frame the page.
  return { ...rest, 'content-security-policy': csp, ...(frameAncestors.length === 0 ? { 'x-frame-options': deny! } : {}) };
}

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
  /** The build's precompressed copies, by content coding. */
  encoded: ReadonlyMap<ContentCoding, Buffer>;
}

/** The codings the build writes (packages/server/ui/build.mjs), by file suffix, brotli first: it is the smaller. */
const CODINGS = [
  ['br', '.br'],
  ['gzip', '.gz'],
] as const;
type ContentCoding = (typeof CODINGS)[number][0];

/**
 * The coding to answer with, from an Accept-Encoding header: of the codings there are copies in,
 * the one the client weighs highest (`q`, 1 when absent; `*` stands for any coding not named;
 * `q=0` refuses), brotli before gzip when equal. Undefined: the bytes as they are.
 */
export function chooseContentCoding(acceptEncoding: string | undefined, available: readonly ContentCoding[]): ContentCoding | undefined {
  if (!acceptEncoding) return undefined;
  const weights = new Map<string, number>();
  for (const part of acceptEncoding.split(',')) {
    const [name = '', ...params] = part.split(';');
    const coding = name.trim().toLowerCase();
    if (coding === '') continue;
    let weight = 1;
    for (const param of params) {
      const q = /^\s*q\s*=\s*([01](?:\.\d{0,3})?)\s*$/iu.exec(param);
      // A malformed weight is not a wish for the coding.
      weight = q ? Math.min(1, Number(q[1])) : /^\s*q\s*=/iu.test(param) ? 0 : weight;
    }
    weights.set(coding, weight);
  }
  let chosen: ContentCoding | undefined;
  let best = 0;
  for (const coding of available) {
    const weight = weights.get(coding) ?? weights.get('*') ?? 0;
    if (weight > best) [chosen, best] = [coding, weight];
  }
  return chosen;
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
    if (!type) continue;
    const encoded = new Map<ContentCoding, Buffer>();
    for (const [coding, suffix] of CODINGS) {
      const file = join(assetsDir, `${name}${suffix}`);
      if (existsSync(file)) encoded.set(coding, readFileSync(file));
    }
    assets.set(name, { type, bytes: readFileSync(join(assetsDir, name)), encoded });
  }
  return assets;
}

/**
 * The inspector, a single page at `/`, and the customer portal at `/portal` (docs/portal.md), with
 * their hashed, immutable assets under `/assets/`, held in memory. Navigation inside a page uses
 * the fragment, so no other path is needed. Without a built page (`pnpm build` not run) its path
 * answers 404 saying so.
 */
export async function inspectorRoutes(app: FastifyInstance, options: { dir?: string | undefined; portalFrameAncestors?: readonly string[] }): Promise<void> {
  const dir = options.dir ?? inspectorDir();
  const index = dir === undefined ? undefined : readFileSync(join(dir, 'index.html'));
  const portal = dir === undefined || !existsSync(join(dir, 'portal.html')) ? undefined : readFileSync(join(dir, 'portal.html'));
  const assets = dir === undefined ? new Map<string, Asset>() : loadAssets(dir);
  const portalPageHeaders = portalHeaders(options.portalFrameAncestors ?? []);

  // On errors too (an unknown asset): every response of the pages' paths carries them.
  app.addHook('onSend', async (request, reply) => {
    reply.headers(request.routeOptions.url === '/portal' ? portalPageHeaders : INSPECTOR_HEADERS);
  });
  const send = (reply: FastifyReply, type: string, bytes: Buffer, cache: string) => reply.header('cache-control', cache).type(type).send(bytes);

  app.get('/', async (_request, reply) => {
    if (index === undefined) throw notFound('inspector page', '/ (run pnpm build to build it)');
    return send(reply, TYPES['.html']!, index, 'no-cache');
  });

  app.get('/portal', async (_request, reply) => {
    if (portal === undefined) throw notFound('portal page', '/portal (run pnpm build to build it)');
    return send(reply, TYPES['.html']!, portal, 'no-cache');
  });

  app.get<{ Params: { name: string } }>('/assets/:name', async (request, reply) => {
    const asset = assets.get(request.params.name);
    if (!asset) throw notFound('asset', request.params.name);
    // A cache keeps one answer per coding asked for.
    reply.header('vary', 'accept-encoding');
    const coding = chooseContentCoding(request.headers['accept-encoding'], [...asset.encoded.keys()]);
    if (coding !== undefined) reply.header('content-encoding', coding);
    // Names carry a hash of their content (see packages/server/ui/build.mjs).
    return send(reply, asset.type, coding === undefined ? asset.bytes : asset.encoded.get(coding)!, 'public, max-age=31536000, immutable');
  });
}
