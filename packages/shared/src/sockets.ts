/**
 * What the API's WebSockets (a CLI's stream, the inspector's watch socket) tell a client when the
 * server ends them, in the range RFC 6455 leaves to applications (4000-4999). Server, CLI and
 * inspector read these, so that a client tells "reconnect" from "stop" by the code alone.
 */

/**
 * The API key the socket was opened with has been revoked (or no longer exists): the same key can
 * never open it again, so a client stops instead of reconnecting. 4401 echoes HTTP's 401.
 */
export const KEY_REVOKED_CLOSE = { code: 4401, reason: 'api key revoked' } as const;

/**
 * The portal link the socket was opened with expired or was revoked: the same code as a revoked
 * key's (a client stops either way), with its own reason.
 */
export const PORTAL_LINK_ENDED_CLOSE = { code: KEY_REVOKED_CLOSE.code, reason: 'portal link expired or revoked' } as const;

/**
 * The server is stopping (SIGTERM, SIGINT): RFC 6455's 1001 "going away". A client reconnects, to
 * this server once it is back or to another behind the same address.
 */
export const SERVER_SHUTDOWN_CLOSE = { code: 1001, reason: 'server shutting down' } as const;

/** The highest ingest body limit a server accepts (`HOOKRELAY_MAX_INGEST_BODY_BYTES`), 256 MiB. */
export const MAX_INGEST_BODY_BYTES_CEILING = 256 * 1024 * 1024;

/**
 * The largest stream frame a client must accept: one message frame carries one body of up to the
 * ingest limit as base64 (4/3 of it), with its headers and fields beside it.
 */
export const STREAM_FRAME_MAX_BYTES = Math.ceil(MAX_INGEST_BODY_BYTES_CEILING / 3) * 4 + 16 * 1024 * 1024;
