/** What the keys of a listening terminal do. */
export interface KeyActions {
  /** `p`: pause forwarding, or resume it. */
  pause(): void;
  /** `r`: forward the last message again. */
  replay(): void;
  /** `q`: stop cleanly, as a first Ctrl-C does. */
  quit(): void;
  /** Ctrl-C / Ctrl-\: raw mode turns them into bytes, so they are passed on as the signal would. */
  interrupt(): void;
}

/** The one-key commands shown in the banner. */
export const KEY_HELP = 'p pause/resume · r replay the last message · q quit';

/** The action of one input chunk's keys (a paste may hold several); unknown keys are ignored. */
export function dispatchKeys(chunk: string, actions: KeyActions): void {
  for (const key of chunk) {
    switch (key) {
      case 'p':
      case 'P':
        actions.pause();
        break;
      case 'r':
      case 'R':
        actions.replay();
        break;
      case 'q':
      case 'Q':
        actions.quit();
        break;
      case '\u0003': // Ctrl-C
      case '\u001c': // Ctrl-\
        actions.interrupt();
        break;
      default:
        break;
    }
  }
}

/**
 * Reads single keys from a terminal (raw mode, so no Enter is needed). Only for a TTY stdin: piped
 * input is the user's, never read as commands. Returns the function that gives the terminal back.
 */
export function listenForKeys(input: NodeJS.ReadStream, actions: KeyActions): () => void {
  if (input.isTTY !== true || typeof input.setRawMode !== 'function') return () => {};
  const onData = (data: Buffer | string): void => dispatchKeys(typeof data === 'string' ? data : data.toString('utf8'), actions);
  input.setRawMode(true);
  input.on('data', onData);
  input.resume();
  let restored = false;
  const restore = (): void => {
    if (restored) return;
    restored = true;
    input.off('data', onData);
    input.setRawMode(false);
    input.pause();
  };
  // A terminal left in raw mode would be unusable after the process: restore it even on a hard exit.
  process.once('exit', restore);
  return () => {
    process.off('exit', restore);
    restore();
  };
}
