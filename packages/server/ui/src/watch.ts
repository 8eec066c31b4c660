import { useEffect, useRef, useState } from 'preact/hooks';
import type { PortalWatchFrame, WatchFrame } from '@hookrelay/shared';
import { KEY_REVOKED_CLOSE } from '@hookrelay/shared/sockets';
import { keyRefused, openSocket } from './api.js';

/** What the page's connection badge shows. */
export type WatchState = 'connecting' | 'live' | 'offline';

/** The frames a watch socket pushes after its `ready`. */
export type WatchUpdate = Exclude<WatchFrame, { type: 'ready' }>;

/** The frames the portal's socket pushes after its `ready`. */
export type PortalUpdate = Exclude<PortalWatchFrame, { type: 'ready' }>;

/** Any socket's frames: a `type`, `ready` first. */
type Frame = { type: string };

/** The frame types of the inspector's watch socket a page takes; others (a newer server's) are left out. */
const WATCH_UPDATE_TYPES: readonly string[] = ['message', 'rejection'];

/** The socket's first reconnection delay, and the longest. */
export const WATCH_RETRY_MS = 2000;
export const WATCH_RETRY_MAX_MS = 30_000;
/** Frames that arrive within this long of the first are handed over together: a burst of webhooks is one render. */
export const WATCH_COALESCE_MS = 16;

/** What a connection hears from its socket; `open` wires a socket's events to these. */
export interface WatchSocketEvents {
  message(data: string): void;
  close(code: number): void;
}

export interface WatchOptions<F extends Frame = WatchUpdate> {
  /** Opens a socket whose frames and close go to `on`; rejects when it cannot (no ticket, no server). */
  open: (on: WatchSocketEvents) => Promise<{ close(): void }>;
  /** The frames that arrived together, in their order. */
  onFrames: (frames: F[]) => void;
  /** The frame types handed to `onFrames` (the inspector's watch socket's by default). */
  types?: readonly string[];
  onState: (state: WatchState) => void;
  /** The server closed the socket because its key was revoked: it is not opened again. */
  onRevoked: () => void;
}

/**
 * A watch socket kept open: opened again after a close or a failed open, with a delay that doubles
 * from WATCH_RETRY_MS to WATCH_RETRY_MAX_MS while it does not come up (a server at its socket limit
 * refuses the upgrade, which a browser reports only as a close) and starts over once it is live;
 * never again after the key-revoked close. Its frames reach `onFrames` in batches of what arrived
 * within WATCH_COALESCE_MS.
 */
export class WatchConnection<F extends Frame = WatchUpdate> {
  private socket: { close(): void } | undefined;
  private stopped = false;
  private retry: ReturnType<typeof setTimeout> | undefined;
  private retryMs = WATCH_RETRY_MS;
  private pending: F[] = [];
  private flushTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly options: WatchOptions<F>) {}

  start(): void {
    this.options.onState('connecting');
    void this.connect();
  }

  /** Closes the socket; nothing more reaches the callbacks, frames not handed over yet included. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
    clearTimeout(this.flushTimer);
    this.pending = [];
    this.socket?.close();
    this.socket = undefined;
  }

  private async connect(): Promise<void> {
    let socket: { close(): void };
    try {
      socket = await this.options.open({ message: (data) => this.take(data), close: (code) => this.closed(code) });
    } catch {
      if (this.stopped) return;
      this.options.onState('offline');
      this.again();
      return;
    }
    if (this.stopped) return socket.close();
    this.socket = socket;
  }

  private again(): void {
    this.retry = setTimeout(() => void this.connect(), this.retryMs);
    this.retryMs = Math.min(this.retryMs * 2, WATCH_RETRY_MAX_MS);
  }

  private closed(code: number): void {
    if (this.stopped) return;
    this.socket = undefined;
    this.options.onState('offline');
    if (code === KEY_REVOKED_CLOSE.code) return this.options.onRevoked();
    this.again();
  }

  private take(data: string): void {
    if (this.stopped) return;
    let frame: F | { type: 'ready' };
    try {
      frame = JSON.parse(data) as F | { type: 'ready' };
    } catch {
      return;
    }
    if (frame === null || typeof frame !== 'object') return;
    if (frame.type === 'ready') {
      this.retryMs = WATCH_RETRY_MS;
      this.options.onState('live');
      return;
    }
    if (!(this.options.types ?? WATCH_UPDATE_TYPES).includes(frame.type)) return;
    if (this.pending.length === 0) this.flushTimer = setTimeout(() => this.flush(), WATCH_COALESCE_MS);
    this.pending.push(frame as F);
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = [];
    this.options.onFrames(batch);
  }
}

/** What a page's socket is besides its path: its frame types and what a refused credential says. */
export interface WatchUse {
  types: readonly string[];
  /** Shown when the server closes the socket for its credential. */
  revokedMessage: string;
}

const INSPECTOR_WATCH: WatchUse = {
  types: WATCH_UPDATE_TYPES,
  revokedMessage: 'the API key was revoked: the server closed the live view; sign in with another key',
};

/** The portal's socket (GET /v1/portal/watch) and what its close for an ended link says. */
export const PORTAL_WATCH: WatchUse = {
  types: ['endpoint', 'endpoint_removed', 'message', 'attempt'],
  revokedMessage: 'this portal link has expired or was revoked: ask for a new link',
};

/**
 * The watch socket of a /v1 path while the component is mounted: `onFrames` (the latest one the
 * component rendered with) gets each batch of frames; the answer is the connection's state. A
 * revoked key (an ended portal link) signs the page out.
 */
export function useWatch<F extends Frame = WatchUpdate>(path: string, onFrames: (frames: F[]) => void, use: WatchUse = INSPECTOR_WATCH): WatchState {
  const [state, setState] = useState<WatchState>('connecting');
  const latest = useRef(onFrames);
  latest.current = onFrames;
  useEffect(() => {
    const connection = new WatchConnection<F>({
      open: async (on) => {
        const socket = await openSocket(path);
        socket.onmessage = (event) => on.message(String(event.data));
        socket.onclose = (event) => on.close(event.code);
        return socket;
      },
      onFrames: (frames) => latest.current(frames),
      types: use.types,
      onState: setState,
      onRevoked: () => keyRefused(use.revokedMessage),
    });
    connection.start();
    return () => connection.stop();
  }, [path]);
  return state;
}
