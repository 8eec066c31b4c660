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

/** Opens `url` in the desktop's browser; resolves false when no opener could be started. */
export function openInBrowser(url: string, platform: NodeJS.Platform = process.platform): Promise<boolean> {
  const [command, args] =
    platform === 'darwin' ? ['open', [url]] : platform === 'win32' ? ['cmd', ['/c', 'start', '""', url.replaceAll('&', '^&')]] : ['xdg-open', [url]];
  return new Promise((resolve) => {
    try {
      const child = spawn(command, args as string[], { stdio: 'ignore', detached: true });
      child.once('error', () => resolve(false));
      child.once('spawn', () => {
        child.unref();
        resolve(true);
      });
    } catch {
      resolve(false);
    }
  });
}
