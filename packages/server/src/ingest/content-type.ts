import type { FastifyRequest } from 'fastify';

export interface ContentTypes {
  /** Called in an ingest route's preParsing step: keeps the header, shows Fastify one it parses. */
  keep(request: FastifyRequest): void;
  /** The Content-Type the sender sent ('' when none). */
  of(request: FastifyRequest): string;
}

/**
 * A webhook's Content-Type is stored as received, whatever it says (docs/api.md, Ingestion), yet
 * Fastify answers 415 for a header it cannot parse (`a`, `x y`, a list, Latin-1) before any parser
 * runs. An ingest route keeps the header before that check and shows Fastify one it parses; the
 * ingest routes' one parser takes every type as raw bytes. One per route plugin, as its requests'.
 */
export function contentTypes(): ContentTypes {
  const received = new WeakMap<FastifyRequest, string>();
  return {
    keep(request) {
      const value = request.headers['content-type'];
      if (value === undefined) return;
      received.set(request, value);
      request.headers['content-type'] = 'application/octet-stream';
    },
    of(request) {
      return received.get(request) ?? request.headers['content-type'] ?? '';
    },
  };
}
