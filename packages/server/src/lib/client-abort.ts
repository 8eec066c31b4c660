import type { FastifyRequest } from 'fastify';

/**
 * Whether a request failed because its own client went away: the connection closed before the
 * body was complete (a reset reads as ECONNRESET, which from the database driver would mean an
 * outage). Such a request is the client's doing, never a fault of the server or its database.
 */
export function clientWentAway(request: FastifyRequest): boolean {
  const raw = request.raw;
  return !raw.complete && (raw.destroyed || raw.readableAborted || raw.socket?.destroyed === true);
}
