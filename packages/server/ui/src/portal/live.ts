import { useEffect, useRef } from 'preact/hooks';
import type { PortalUpdate } from '../watch.js';

/**
 * The portal's one live socket, heard by every view: the page opens it once (portal.tsx) and hands
 * each batch of its frames here; a view takes the frames it shows. `ready` (also after a
 * reconnection) tells views to read what they show again: the frames that follow are changes since.
 */
type Listener = { frames(frames: PortalUpdate[]): void; ready(): void };
const listeners = new Set<Listener>();

export function publishFrames(frames: PortalUpdate[]): void {
  listeners.forEach((listener) => listener.frames(frames));
}

export function publishReady(): void {
  listeners.forEach((listener) => listener.ready());
}

/** Calls `onFrames` (the latest one rendered) with each batch of frames, and `onReady` on each `ready`, while mounted. */
export function usePortalFrames(onFrames: (frames: PortalUpdate[]) => void, onReady: () => void): void {
  const latest = useRef({ onFrames, onReady });
  latest.current = { onFrames, onReady };
  useEffect(() => {
    const listener: Listener = { frames: (frames) => latest.current.onFrames(frames), ready: () => latest.current.onReady() };
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
}
