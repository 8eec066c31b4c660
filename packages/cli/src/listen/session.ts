import type { HookrelayClient, ListenFilter } from '@hookrelay/shared';
import { uuidv7Time } from '@hookrelay/shared/ids';
import type { Style } from '../format/style.js';
import type { StopSignals } from '../signals.js';
import { createListenApi } from './api.js';
import { bodyOpener } from './body-fetch.js';
import { CursorStore } from './cursor-store.js';
import { Forwarder, type ForwardableMessage, type TlsSettings } from './forwarder.js';
import { KEY_HELP, listenForKeys } from './keys.js';
import { Listener } from './listener.js';
import { ListenOutput } from './output.js';
import { ZERO_CURSOR, type TransportMode } from './ports.js';
import type { ForwardRoute } from './routes.js';

/** How a session forwards: the forwarding flags of `listen` and `dev`, checked and parsed. */
export interface ForwardingSettings {
  /** `--events` / `--path`, applied by the server; skipped messages still move the cursor. */
  filter: ListenFilter;
  /** In order: the first that takes a message forwards it. */
  routes: ForwardRoute[];
  /** Where the routes came from, for the banner: `--forward-to` or the project file's path. */
  routesFrom: string;
  tls: TlsSettings;
  transport: TransportMode;
  preserveHost: boolean;
  /** 0: no limit. */
  timeoutMs: number;
  maxWaitMs: number | undefined;
  heartbeatTimeoutMs: number;
  captureResponseBytes: number;
  verbose: boolean;
}

/** Where a listen session starts (the flags of `listen`; `dev` always resumes). */
export interface ListenStart {
  fromStart?: boolean;
  /** `--since`: the flag's text (for the banner) and the cursor it stands for. */
  since?: { text: string; cursor: string } | undefined;
  skipBacklog?: boolean;
  /**
   * Without a stored cursor: `now` (listen's first run) or the endpoint's first message (`dev`,
   * whose endpoint receives nothing while it is not running, so nothing sent is ever skipped).
   */
  withoutCursor?: 'now' | 'first-message';
}

export interface ListenSessionOptions {
  client: HookrelayClient;
  apiUrl: string;
  apiKey: string;
  userAgent: string;
  endpointId: string;
  /**
   * The endpoint's newest message id as the caller has just read it (`dev`): the listener's first
   * read of it is answered from this instead of asking the server again.
   */
  latestMessageId?: string | null;
  /** Cursors live in `<cursorRoot>/cursors/<profile>/…` (the config dir for `listen`). */
  cursorRoot: string;
  profile: string;
  /** `--name`: the listener slot; undefined picks the first free one. */
  name?: string | undefined;
  forwarding: ForwardingSettings;
  exitOnDisconnectMs?: number | undefined;
  start: ListenStart;
  json: boolean;
  /** Colours of stderr. */
  style: Style;
  stop: StopSignals;
  /** Lines shown (to people) before the listener's own banner. */
  bannerPrefix?: readonly string[];
  /** Where p/r/q are read from; only used when it is a terminal and not --json. */
  keys?: NodeJS.ReadStream | undefined;
}

function describeCursor(id: string): string {
  return id === ZERO_CURSOR ? "the endpoint's first message" : `${id} (${new Date(uuidv7Time(id)).toISOString()})`;
}

function describeStart(start: ListenStart, stored: string | null, cursor: string | null): string {
  if (start.fromStart === true) return "replaying from the endpoint's first message";
  if (start.since !== undefined && cursor !== null) return `replaying after ${describeCursor(cursor)} (--since ${start.since.text})`;
  if (start.skipBacklog === true) return 'skipping the backlog: starting from now';
  if (stored !== null) return `resuming after ${describeCursor(stored)}`;
  if (start.withoutCursor === 'first-message') return "first run on this endpoint: starting with the endpoint's first message";
  return 'first run on this endpoint: starting from now';
}

const loadOra = async () => (await import('ora')).default;

/**
 * The listen engine as a command runs it: claims a cursor slot, forwards every message of the
 * endpoint to the target in order until `stop` fires (or a fatal error), saves the cursor and says
 * where the next run resumes. Shared by `hookrelay listen` and `hookrelay dev`.
 */
export async function runListenSession(options: ListenSessionOptions): Promise<void> {
  const { client, endpointId, forwarding, stop } = options;
  const store = await CursorStore.open({
    configDir: options.cursorRoot,
    profile: options.profile,
    endpointId,
    name: options.name,
  });
  const releaseOnExit = (): void => store.releaseSync();
  process.once('exit', releaseOnExit);
  const output = new ListenOutput({
    json: options.json,
    style: options.style,
    // A terminal that reports no width (some CI pseudo-terminals) would make ora clear lines endlessly.
    loadSpinner: !options.json && process.stderr.isTTY === true && (process.stderr.columns ?? 0) > 0 ? loadOra : undefined,
    stdout: process.stdout,
    stderr: process.stderr,
    apiUrl: options.apiUrl,
    endpointId,
    target: forwarding.routes.length === 1 ? forwarding.routes[0]!.display : `${forwarding.routes.length} routes`,
    showTarget: forwarding.routes.length > 1,
    verbose: forwarding.verbose,
  });
  const offStop = stop.onStop(() => output.stopping());
  const offQuit = stop.onQuit(() => output.close());
  try {
    const storedFile = await store.read();
    const stored = storedFile?.cursor ?? null;
    const start = options.start;
    const withoutCursor = start.withoutCursor === 'first-message' ? ZERO_CURSOR : null;
    const startCursor =
      start.fromStart === true ? ZERO_CURSOR : (start.since?.cursor ?? (start.skipBacklog === true ? null : (stored ?? withoutCursor)));
    const style = options.style;
    const routes = forwarding.routes;
    const { filter } = forwarding;
    const filterText = [filter.events === undefined ? '' : `events ${filter.events}`, filter.path === undefined ? '' : `path ${filter.path}`]
      .filter((part) => part !== '')
      .join(' and ');
    const keysInput = !options.json && options.keys?.isTTY === true ? options.keys : undefined;
    output.banner([
      ...(options.bannerPrefix ?? []),
      routes.length === 1
        ? `${style.bold('Forwarding')} inbound endpoint ${endpointId} → ${style.bold(routes[0]!.display)}`
        : `${style.bold('Forwarding')} inbound endpoint ${endpointId}, first matching route wins:`,
      ...(routes.length === 1 ? [] : routes.map((route) => `  ${style.bold(route.display)}`)),
      ...(forwarding.routesFrom === '--forward-to' ? [] : [style.dim(`  routes from ${forwarding.routesFrom}`)]),
      ...(filterText === '' ? [] : [style.dim(`  only ${filterText} (the server skips the rest)`)]),
      style.dim(`  listener "${store.slot}", cursor file ${store.file}`),
      style.dim(`  ${describeStart(start, stored, startCursor)}`),
      ...(storedFile === null || storedFile.results.length === 0
        ? []
        : [style.dim(`  ${storedFile.results.length === 1 ? '1 result' : `${storedFile.results.length} results`} of the last run not acknowledged by the server: sending again`)]),
      style.dim(keysInput === undefined ? '  Ctrl-C to stop' : `  ${KEY_HELP} · Ctrl-C to stop`),
    ]);
    if (forwarding.tls.insecure) output.warn('--insecure: the certificates of https:// targets are not checked');
    if (storedFile !== null && storedFile.unreadableResults > 0) {
      output.warn(`${store.file}: ${storedFile.unreadableResults === 1 ? '1 stored result is' : `${storedFile.unreadableResults} stored results are`} not valid and left out`);
    }

    const forwarder = new Forwarder({
      routes,
      tls: forwarding.tls,
      captureResponseBytes: forwarding.captureResponseBytes,
      preserveHost: forwarding.preserveHost,
      timeoutMs: forwarding.timeoutMs,
      maxWaitMs: forwarding.maxWaitMs,
      refetch: async (id) => {
        const { data } = await client.inboundMessages.get(id, { body_encoding: 'base64' });
        return { ...data, message_id: data.id } as ForwardableMessage;
      },
      openBody: bodyOpener({ apiUrl: options.apiUrl, apiKey: options.apiKey, userAgent: options.userAgent }),
      onHold: (info) => output.holding(info),
      onResume: (info) => output.resumed(info),
    });
    const listener = new Listener({
      mode: forwarding.transport,
      name: store.slot,
      filtered: filter.events !== undefined || filter.path !== undefined,
      startCursor,
      pendingResults: storedFile?.results,
      exitOnDisconnectMs: options.exitOnDisconnectMs,
      timing: { heartbeatTimeoutMs: forwarding.heartbeatTimeoutMs },
      api: createListenApi(client, endpointId, {
        apiUrl: options.apiUrl,
        apiKey: options.apiKey,
        userAgent: options.userAgent,
        handshakeTimeoutMs: 10_000,
        heartbeatTimeoutMs: forwarding.heartbeatTimeoutMs,
        heartbeatWarnMs: Math.round((forwarding.heartbeatTimeoutMs * 2) / 3),
      }, filter, options.latestMessageId),
      deliverer: forwarder,
      cursors: store,
      events: output,
    });
    const releaseKeys =
      keysInput === undefined
        ? () => {}
        : listenForKeys(keysInput, {
            pause: () => listener.togglePause(),
            replay: () => {
              if (!listener.replayLast()) output.info('nothing to replay yet');
            },
            quit: () => stop.trigger(),
            interrupt: () => stop.trigger(),
          });
    try {
      await listener.run(stop.signal);
    } finally {
      releaseKeys();
      await forwarder.close();
    }
    output.stopped(
      `stopped. ${listener.cursor === null ? 'No cursor yet.' : `Listener "${store.slot}" resumes after ${listener.cursor} (${store.file}).`}`,
    );
  } finally {
    output.close();
    offStop();
    offQuit();
    await store.release();
    process.off('exit', releaseOnExit);
  }
}
