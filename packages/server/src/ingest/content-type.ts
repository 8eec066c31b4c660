import type { FastifyRequest } from 'fastify';

const received = new WeakMap<FastifyRequest, string>();

/**
 * A webhook's Content-Type is stored as received, whatever it says (docs/api.md, Ingestion), yet
 * Fastify answers 415 for a header it cannot parse (`a`, `x y`, a list, Latin-1) before any parser
 * runs. Called in the ingest routes' preParsing step, before that check: the header is kept and
 * Fastify is shown one it parses; the ingest routes' one parser takes every type as raw bytes.
 */
export function keepContentType(request: FastifyRequest): void {
  const value = request.headers['content-type'];
  if (value === undefined) return;
  received.set(request, value);
  request.headers['content-type'] = 'application/octet-stream';
}

/** The Content-Type the sender sent ('' when none). */
export function contentTypeOf(request: FastifyRequest): string {
  return received.get(request) ?? request.headers['content-type'] ?? '';
}
