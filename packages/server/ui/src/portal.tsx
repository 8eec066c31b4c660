import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { PortalSessionOut } from '@hookrelay/shared';
import { HookrelayApiError } from '@hookrelay/shared/answer';
import { api, forgetKey, setUnauthorizedHandler, storedKey, storeKey, choosePortalCredential } from './api.js';
import { ErrorBox, Time } from './components.js';
import { PortalCatalogue } from './portal/catalogue.js';
import { PortalEndpoint } from './portal/endpoint.js';
import { PortalEndpoints } from './portal/endpoints.js';
import { publishFrames, publishReady } from './portal/live.js';
import { PortalMessage } from './portal/message.js';
import { PORTAL_WATCH, useWatch, type PortalUpdate } from './watch.js';
import './styles.css';

/** How the host page asked the portal to look (`theme=`, `accent=`), kept for the tab like the token. */
const LOOK_ITEM = 'hookrelay.portalLook';
const ACCENT = /^#[0-9a-f]{6}$/iu;

/**
 * `#token=…&theme=light|dark&accent=%23rrggbb` (a portal link, maybe from a host page's frame): the
 * token goes to sessionStorage and leaves the address bar and the history at once.
 */
function takeFragment(): void {
  if (!location.hash.startsWith('#token=')) return;
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get('token');
  if (token) storeKey(token);
  const theme = params.get('theme');
  const accent = params.get('accent');
  const look = { theme: theme === 'light' || theme === 'dark' ? theme : null, accent: accent !== null && ACCENT.test(accent) ? accent : null };
  sessionStorage.setItem(LOOK_ITEM, JSON.stringify(look));
  history.replaceState(null, '', `${location.pathname}#/`);
}

function applyLook(): void {
  let look: { theme?: unknown; accent?: unknown } = {};
  try {
    look = JSON.parse(sessionStorage.getItem(LOOK_ITEM) ?? '{}') as typeof look;
  } catch {
    // A look that does not parse is no look.
  }
  if (look.theme === 'light' || look.theme === 'dark') document.documentElement.dataset.theme = look.theme;
  // Set through the CSSOM, which the page's CSP (style-src 'self') allows, never as markup.
  if (typeof look.accent === 'string' && ACCENT.test(look.accent)) document.documentElement.style.setProperty('--accent', look.accent);
}

/**
 * Tells the page that frames the portal (docs/portal.md, Embedding) that it is ready or that its
 * link ended. Any target origin: the page's CSP lets only the configured origins frame it, and
 * the messages carry nothing the host did not give the portal.
 */
function tellHost(message: { type: 'hookrelay:portal:ready'; expires_at: string } | { type: 'hookrelay:portal:expired' }): void {
  if (window.parent !== window) window.parent.postMessage(message, '*');
}

function useRoute(): string[] {
  const read = () => location.hash.replace(/^#\/?/, '').split('?')[0]!.split('/').filter(Boolean).map(decodeURIComponent);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const onChange = () => setRoute(read());
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

function Page({ route, session }: { route: string[]; session: PortalSessionOut }) {
  const [section, id] = route;
  if (section === 'endpoints' && id) return <PortalEndpoint endpointId={id} readOnly={session.read_only} />;
  if (section === 'messages' && id) return <PortalMessage messageId={id} readOnly={session.read_only} />;
  if (section === 'catalogue') return <PortalCatalogue />;
  return <PortalEndpoints readOnly={session.read_only} />;
}

/** The live socket of the signed-in portal: its frames go to every view, its `ready` makes them read again. */
function Live() {
  const state = useWatch<PortalUpdate>('/v1/portal/watch', publishFrames, PORTAL_WATCH);
  useEffect(() => {
    if (state === 'live') publishReady();
  }, [state]);
  return (
    <span class="muted" data-testid="live-state" aria-live="polite">
      {state}
    </span>
  );
}

function Ended({ error }: { error: unknown }) {
  return (
    <main class="signin">
      <h1>This link has ended</h1>
      <p>Portal links expire, and can be revoked. Ask for a new link to manage your webhooks again.</p>
      <ErrorBox error={error} />
    </main>
  );
}

function App() {
  const route = useRoute();
  const [session, setSession] = useState<PortalSessionOut | null>(null);
  const [ended, setEnded] = useState<unknown>(storedKey() === null ? new HookrelayApiError('UNAUTHORIZED', 'this page was opened without a portal link', 401, undefined) : undefined);
  const [error, setError] = useState<unknown>(undefined);

  useEffect(() => {
    setUnauthorizedHandler((refused) => {
      forgetKey();
      setSession(null);
      setEnded(refused);
    });
  }, []);
  useEffect(() => {
    if (ended !== undefined) return tellHost({ type: 'hookrelay:portal:expired' });
    api<PortalSessionOut>('GET', '/v1/portal/session').then(
      ({ data }) => {
        setSession(data);
        tellHost({ type: 'hookrelay:portal:ready', expires_at: data.expires_at });
      },
      (caught: unknown) => {
        if (!(caught instanceof HookrelayApiError && caught.code === 'UNAUTHORIZED')) setError(caught);
      },
    );
  }, [ended === undefined]);

  if (ended !== undefined) return <Ended error={ended} />;
  if (!session) return <main>{error === undefined ? <p class="muted">Loading…</p> : <ErrorBox error={error} />}</main>;
  const section = route[0] === 'catalogue' ? 'catalogue' : 'endpoints';
  return (
    <>
      <header class="top">
        <span class="brand">Webhooks</span>
        <nav aria-label="Sections">
          <a href="#/" aria-current={section === 'endpoints' ? 'page' : undefined}>
            Endpoints
          </a>
          <a href="#/catalogue" aria-current={section === 'catalogue' ? 'page' : undefined}>
            Event types
          </a>
        </nav>
        <span class="muted project" data-testid="session">
          {session.project_name} · {session.read_only ? 'read-only · ' : ''}link valid until <Time iso={session.expires_at} />
        </span>
        <Live />
      </header>
      <main>
        <Page route={route} session={session} />
      </main>
    </>
  );
}

choosePortalCredential();
takeFragment();
applyLook();
render(<App />, document.getElementById('app')!);
