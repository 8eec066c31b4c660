import type { StreamServerFrame, WatchFrame } from '@hookrelay/shared';

/** The text of a frame a CLI's stream sends: its type admits only the shared protocol's frames. */
export function streamFrameText(frame: StreamServerFrame): string {
  return JSON.stringify(frame);
}

/** The text of a frame a watch socket sends (the inspector's live view). */
export function watchFrameText(frame: WatchFrame): string {
  return JSON.stringify(frame);
}
