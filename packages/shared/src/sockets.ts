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
