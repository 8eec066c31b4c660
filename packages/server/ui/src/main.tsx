import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { WhoamiOut } from '@hookrelay/shared';
import { HookrelayApiError } from '@hookrelay/shared/answer';
import { api, forgetKey, setUnauthorizedHandler, storedKey, storeKey } from './api.js';
import { ErrorBox } from './components.js';
import { InboundEndpoints, InboundMessages } from './views/inbound.js';
import { InboundMessage } from './views/message.js';
import { OutboundEndpoints, OutboundMessage, OutboundMessages } from './views/outbound.js';
import { PullEndpoints, PullEvent, PullEvents } from './views/pull.js';
import { Rejection } from './views/rejections.js';
import './styles.css';

/**
 * `#key=…` (from `hookrelay open` or `hookrelay dev`): the key goes to sessionStorage and leaves
 * the address bar and the history at once; `&endpoint=ID` opens that endpoint's messages.
 */
function takeKeyFromFragment(): void {
  if (!location.hash.startsWith('#key=')) return;
  const params = new URLSearchParams(location.hash.slice(1));
  const key = params.get('key');
  const endpoint = params.get('endpoint');
  if (key) storeKey(key);
  history.replaceState(null, '', `${location.pathname}${endpoint ? `#/inbound/${encodeURIComponent(endpoint)}` : '#/'}`);
}

function useRoute(): string[] {
  const read = () => location.hash.replace(/^#\/?/, '').split('?')[0]!.split('/').filter(Boolean).map(decodeURIComponent);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const onChange = () => setRoute(read());
    addEventListener('hashchange', onChange);
    // Effects run after the first paint: an address changed before then fired no listener of ours.
    onChange();
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

function SignIn({ onSignedIn, reason }: { onSignedIn: (who: WhoamiOut) => void; reason: unknown }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>(reason);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      const { data } = await api<WhoamiOut>('GET', '/v1/whoami', { key: key.trim() });
      storeKey(key.trim());
      onSignedIn(data);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <h1>hookrelay inspector</h1>
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input id="api-key" type="password" autocomplete="off" value={key} onInput={(e) => setKey(e.currentTarget.value)} required />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <p class="muted">The key stays in this tab (sessionStorage) and is sent only in the Authorization header of API calls.</p>
        <ErrorBox error={error} />
      </form>
    </main>
  );
}

function Page({ route }: { route: string[] }) {
  const [section, id, sub, subId] = route;
  if ((section === 'inbound' || section === 'pull') && id && sub === 'rejections' && subId) return <Rejection kind={section} endpointId={id} rejectionId={subId} />;
  if (section === 'inbound' && id) return <InboundMessages endpointId={id} />;
  if (section === 'inbound-messages' && id) return <InboundMessage messageId={id} />;
  if (section === 'outbound' && id) return <OutboundMessages endpointId={id} />;
  if (section === 'outbound') return <OutboundEndpoints />;
  if (section === 'outbound-messages' && id) return <OutboundMessage messageId={id} />;
  if (section === 'pull' && id && sub === 'events' && subId) return <PullEvent endpointId={id} eventId={subId} />;
  if (section === 'pull' && id) return <PullEvents endpointId={id} />;
  if (section === 'pull') return <PullEndpoints />;
  return <InboundEndpoints />;
}

function App() {
  const route = useRoute();
  const [signedIn, setSignedIn] = useState(storedKey() !== null);
  const [who, setWho] = useState<WhoamiOut | null>(null);
  const [signInError, setSignInError] = useState<unknown>(undefined);

  useEffect(() => {
    setUnauthorizedHandler((error) => {
      forgetKey();
      setSignedIn(false);
      setWho(null);
      setSignInError(error);
    });
  }, []);
  // The view loads at once with the stored key; the project's name comes along. A key the API
  // refuses (here or in the view's own calls) brings the sign-in form back with the error.
  useEffect(() => {
    if (!signedIn || who) return;
    api<WhoamiOut>('GET', '/v1/whoami').then(
      ({ data }) => setWho(data),
      (error: unknown) => {
        if (!(error instanceof HookrelayApiError && error.code === 'UNAUTHORIZED')) setSignInError(error);
      },
    );
  }, [signedIn]);

  if (!signedIn) return <SignIn reason={signInError} onSignedIn={(data) => (setSignInError(undefined), setWho(data), setSignedIn(true))} />;
  const section = route[0] === 'outbound' || route[0] === 'outbound-messages' ? 'outbound' : route[0] === 'pull' ? 'pull' : 'inbound';
  return (
    <>
      <header class="top">
        <span class="brand">hookrelay</span>
        <nav aria-label="Sections">
          <a href="#/" aria-current={section === 'inbound' ? 'page' : undefined}>
            Inbound
          </a>
          <a href="#/outbound" aria-current={section === 'outbound' ? 'page' : undefined}>
            Outbound
          </a>
          <a href="#/pull" aria-current={section === 'pull' ? 'page' : undefined}>
            Pull
          </a>
        </nav>
        <span class="muted project" data-testid="project">
          {who ? `project ${who.project_name}` : ''}
        </span>
        <button
          type="button"
          class="small"
          onClick={() => {
            forgetKey();
            setWho(null);
            setSignedIn(false);
          }}
        >
          Sign out
        </button>
      </header>
      <main>
        <Page route={route} />
      </main>
    </>
  );
}

takeKeyFromFragment();
render(<App />, document.getElementById('app')!);
