import type { PortalWatchFrame, StreamServerFrame, WatchFrame } from '@hookrelay/shared';

/** The text of a frame a CLI's stream sends: its type admits only the shared protocol's frames. */
export function streamFrameText(frame: StreamServerFrame): string {
  return JSON.stringify(frame);
}

/** The text of a frame a watch socket sends (the inspector's live view). */
export function watchFrameText(frame: WatchFrame): string {
  return JSON.stringify(frame);
}

/** The text of a frame a portal's socket sends (GET /v1/portal/watch). */
export function portalWatchFrameText(frame: PortalWatchFrame): string {
  return JSON.stringify(frame);
}
