import type { WebSocket } from 'ws';

/**
 * Pings `socket` every `intervalMs` and drops it when the previous ping got no pong (nor any other
 * frame, reported with the returned function) by then; `onClose` runs once the socket closes.
 */
export function keepAlive(socket: WebSocket, intervalMs: number, onClose: () => void): () => void {
  let alive = true;
  const timer = setInterval(() => {
    if (!alive) return socket.terminate();
    alive = false;
    socket.ping();
  }, intervalMs);
  socket.on('pong', () => (alive = true));
  socket.on('close', () => {
    clearInterval(timer);
    onClose();
  });
  return () => {
    alive = true;
  };
}
