import { spawn } from 'node:child_process';

/**
 * The inspector page of the server at `apiUrl`, signed in with `apiKey`: the key travels in the
 * fragment, which browsers never send to a server, so it reaches no request line or log; the page
 * moves it to sessionStorage and removes it from the address bar. `endpointId` opens that inbound
 * endpoint's live messages.
 */
export function inspectorUrl(apiUrl: string, apiKey: string, endpointId?: string): string {
  const fragment = new URLSearchParams({ key: apiKey, ...(endpointId === undefined ? {} : { endpoint: endpointId }) });
  return `${apiUrl.replace(/\/+$/u, '')}/#${fragment.toString()}`;
}

/** What became of an attempt to open a browser: `reason` says why none was started. */
export interface BrowserOpening {
  opened: boolean;
  reason: string | null;
}

/**
 * How long the opener may run before it counts as started: `xdg-open` and `open` hand the URL over
 * and exit, and their exit status says whether a browser took it; one still running by then has
 * started a browser that it waits for.
 */
const OPENER_SETTLE_MS = 5_000;

/**
 * Opens `url` in the desktop's browser. On Linux and the BSDs a graphical session (DISPLAY or
 * WAYLAND_DISPLAY) is needed, `xdg-open` must exist and must not fail; `env` is the CLI's
 * environment (also handed to the opener, so its PATH decides which opener runs).
 */
export function openInBrowser(url: string, env: Readonly<Record<string, string | undefined>>, platform: NodeJS.Platform = process.platform): Promise<BrowserOpening> {
  const graphical = platform === 'darwin' || platform === 'win32' || (env.DISPLAY ?? '') !== '' || (env.WAYLAND_DISPLAY ?? '') !== '';
  if (!graphical) return Promise.resolve({ opened: false, reason: 'no graphical session (neither DISPLAY nor WAYLAND_DISPLAY is set)' });
  const [command, args] =
    platform === 'darwin' ? ['open', [url]] : platform === 'win32' ? ['cmd', ['/c', 'start', '""', url.replaceAll('&', '^&')]] : ['xdg-open', [url]];
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const settle = (result: BrowserOpening): void => {
      if (timer !== undefined) clearTimeout(timer);
      resolve(result);
    };
    try {
      const child = spawn(command, args as string[], { stdio: 'ignore', detached: true, env: { ...env } });
      child.once('error', (error: NodeJS.ErrnoException) =>
        settle({ opened: false, reason: error.code === 'ENOENT' ? `${command} is not installed` : `${command} could not be started (${error.message})` }),
      );
      child.once('exit', (code, signal) =>
        settle(code === 0 ? { opened: true, reason: null } : { opened: false, reason: `${command} failed (${signal === null ? `exit code ${code}` : signal})` }),
      );
      child.once('spawn', () => {
        timer = setTimeout(() => {
          child.unref();
          settle({ opened: true, reason: null });
        }, OPENER_SETTLE_MS);
      });
    } catch (error) {
      settle({ opened: false, reason: `${command} could not be started (${(error as Error).message})` });
    }
  });
}
