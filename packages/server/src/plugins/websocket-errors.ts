import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';

/**
 * @fastify/websocket's `errorHandler`: errors on an open socket, and errors thrown by a WebSocket
 * route's handler. `ws` raises `WS_ERR_*` errors for what the client sent (a frame over `maxPayload`,
 * invalid UTF-8, a bad opcode) and has already begun the close with the matching code (1009, 1007,
 * 1002), which terminating the socket here would cut short. Any client can send those at will, so
 * they are logged at warn without a stack; anything else is the server's fault and logged as one.
 */
export function answerWebSocketError(this: FastifyInstance, error: Error, socket: WebSocket, request: FastifyRequest): void {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && code.startsWith('WS_ERR_')) {
    request.log.warn({ err: { code, message: error.message } }, 'websocket closed: the client sent a frame the server refuses');
    return;
  }
  request.log.error({ err: error }, 'websocket failed');
  socket.terminate();
}
