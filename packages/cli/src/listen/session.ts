import type { HookrelayClient, ListenFilter } from '@hookrelay/shared';
import { uuidv7Time } from '@hookrelay/shared/ids';
import type { Style } from '../format/style.js';
import type { StopSignals } from '../signals.js';
import { createListenApi } from './api.js';
import { bodyOpener } from './body-fetch.js';
import { CursorStore, type StoredCursor } from './cursor-store.js';
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

/** One endpoint a session forwards from. */
export interface ListenEndpoint {
  endpointId: string;
  /**
   * The endpoint's newest message id as the caller has just read it (`dev`): the listener's first
   * read of it is answered from this instead of asking the server again.
   */
  latestMessageId?: string | null;
  /** Its own routes (`dev --verify`: those of its provider); default: the forwarding settings'. */
  routes?: ForwardRoute[];
  /** Names it in the banner and in its state lines when the session has several (`github`). */
  label?: string;
}

export interface ListenSessionOptions {
  client: HookrelayClient;
  apiUrl: string;
  apiKey: string;
  userAgent: string;
  /** Each gets a listener of its own, all in this one session (one banner, one set of keys). */
  endpoints: readonly ListenEndpoint[];
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

/** One endpoint's listener, as the session runs it. */
interface Channel {
  endpoint: ListenEndpoint;
  routes: ForwardRoute[];
  store: CursorStore;
  stored: StoredCursor | null;
  startCursor: string | null;
  output: ListenOutput;
}

/** Claims the endpoint's cursor slot and reads where its listener starts. */
async function openChannel(options: ListenSessionOptions, endpoint: ListenEndpoint, several: boolean): Promise<Channel> {
  const routes = endpoint.routes ?? options.forwarding.routes;
  const store = await CursorStore.open({ configDir: options.cursorRoot, profile: options.profile, endpointId: endpoint.endpointId, name: options.name });
  const output = new ListenOutput({
    json: options.json,
    style: options.style,
    // A terminal that reports no width (some CI pseudo-terminals) would make ora clear lines endlessly;
    // several listeners would draw several spinners over one another.
    loadSpinner: !several && !options.json && process.stderr.isTTY === true && (process.stderr.columns ?? 0) > 0 ? loadOra : undefined,
    stdout: process.stdout,
    stderr: process.stderr,
    apiUrl: options.apiUrl,
    endpointId: endpoint.endpointId,
    label: several ? endpoint.label : undefined,
    target: routes.length === 1 ? routes[0]!.display : `${routes.length} routes`,
    showTarget: routes.length > 1,
    verbose: options.forwarding.verbose,
  });
  const channel: Channel = { endpoint, routes, store, stored: null, startCursor: null, output };
  try {
    channel.stored = await store.read();
  } catch (error) {
    output.close();
    await store.release();
    throw error;
  }
  const start = options.start;
  const stored = channel.stored?.cursor ?? null;
  const withoutCursor = start.withoutCursor === 'first-message' ? ZERO_CURSOR : null;
  channel.startCursor =
    start.fromStart === true ? ZERO_CURSOR : (start.since?.cursor ?? (start.skipBacklog === true ? null : (stored ?? withoutCursor)));
  return channel;
}

/** The banner's lines of one endpoint: what it forwards where, its cursor and where it starts. */
function channelLines(channel: Channel, style: Style, start: ListenStart, several: boolean, common: readonly string[]): string[] {
  const { routes, store, stored } = channel;
  const id = channel.endpoint.endpointId;
  const label = several && channel.endpoint.label !== undefined ? ` (${channel.endpoint.label})` : '';
  return [
    routes.length === 1
      ? `${style.bold('Forwarding')} inbound endpoint ${id}${label} → ${style.bold(routes[0]!.display)}`
      : `${style.bold('Forwarding')} inbound endpoint ${id}${label}, first matching route wins:`,
    ...(routes.length === 1 ? [] : routes.map((route) => `  ${style.bold(route.display)}`)),
    ...common,
    style.dim(`  listener "${store.slot}", cursor file ${store.file}`),
    style.dim(`  ${describeStart(start, stored?.cursor ?? null, channel.startCursor)}`),
    ...(stored === null || stored.results.length === 0
      ? []
      : [style.dim(`  ${stored.results.length === 1 ? '1 result' : `${stored.results.length} results`} of the last run not acknowledged by the server: sending again`)]),
  ];
}

function listenerOf(options: ListenSessionOptions, channel: Channel): { listener: Listener; forwarder: Forwarder } {
  const { client, forwarding } = options;
  const { output } = channel;
  const endpointId = channel.endpoint.endpointId;
  const forwarder = new Forwarder({
    routes: channel.routes,
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
  const { filter } = forwarding;
  const listener = new Listener({
    mode: forwarding.transport,
    name: channel.store.slot,
    filtered: filter.events !== undefined || filter.path !== undefined,
    startCursor: channel.startCursor,
    pendingResults: channel.stored?.results,
    exitOnDisconnectMs: options.exitOnDisconnectMs,
    timing: { heartbeatTimeoutMs: forwarding.heartbeatTimeoutMs },
    api: createListenApi(client, endpointId, {
      apiUrl: options.apiUrl,
      apiKey: options.apiKey,
      userAgent: options.userAgent,
      handshakeTimeoutMs: 10_000,
      heartbeatTimeoutMs: forwarding.heartbeatTimeoutMs,
      heartbeatWarnMs: Math.round((forwarding.heartbeatTimeoutMs * 2) / 3),
    }, filter, channel.endpoint.latestMessageId),
    deliverer: forwarder,
    cursors: channel.store,
    events: output,
  });
  return { listener, forwarder };
}

/**
 * The listen engine as a command runs it: claims a cursor slot on each endpoint, forwards every
 * message of each to its routes in order until `stop` fires (or a fatal error, which stops them
 * all), saves the cursors and says where the next run resumes. Shared by `hookrelay listen` (one
 * endpoint) and `hookrelay dev` (one, or one per provider it verifies).
 */
export async function runListenSession(options: ListenSessionOptions): Promise<void> {
  const { forwarding, stop, style } = options;
  const several = options.endpoints.length > 1;
  const channels: Channel[] = [];
  const releaseOnExit = (): void => {
    for (const channel of channels) channel.store.releaseSync();
  };
  process.once('exit', releaseOnExit);
  const offs: (() => void)[] = [];
  try {
    for (const endpoint of options.endpoints) channels.push(await openChannel(options, endpoint, several));
    const first = channels[0]!.output;
    // One "stopping" line for the session; the other outputs only stop.
    offs.push(stop.onStop(() => channels.forEach((channel) => (channel.output === first ? first.stopping() : channel.output.close()))));
    offs.push(stop.onQuit(() => channels.forEach((channel) => channel.output.close())));

    const { filter } = forwarding;
    const filterText = [filter.events === undefined ? '' : `events ${filter.events}`, filter.path === undefined ? '' : `path ${filter.path}`]
      .filter((part) => part !== '')
      .join(' and ');
    const common = [
      ...(forwarding.routesFrom === '--forward-to' ? [] : [style.dim(`  routes from ${forwarding.routesFrom}`)]),
      ...(filterText === '' ? [] : [style.dim(`  only ${filterText} (the server skips the rest)`)]),
    ];
    const keysInput = !options.json && options.keys?.isTTY === true ? options.keys : undefined;
    first.banner([
      ...(options.bannerPrefix ?? []),
      ...(several
        ? [...channels.flatMap((channel) => channelLines(channel, style, options.start, true, [])), ...common]
        : channelLines(channels[0]!, style, options.start, false, common)),
      style.dim(keysInput === undefined ? '  Ctrl-C to stop' : `  ${KEY_HELP} · Ctrl-C to stop`),
    ]);
    if (forwarding.tls.insecure) first.warn('--insecure: the certificates of https:// targets are not checked');
    for (const { stored, store, output } of channels) {
      if (stored !== null && stored.unreadableResults > 0) {
        output.warn(`${store.file}: ${stored.unreadableResults === 1 ? '1 stored result is' : `${stored.unreadableResults} stored results are`} not valid and left out`);
      }
    }

    const running = channels.map((channel) => ({ channel, ...listenerOf(options, channel) }));
    const releaseKeys =
      keysInput === undefined
        ? () => {}
        : listenForKeys(keysInput, {
            pause: () => running.forEach(({ listener }) => listener.togglePause()),
            replay: () => {
              // The listener that forwarded last: message ids are in the order of their arrival.
              const latest = running
                .filter(({ listener }) => listener.lastForwardedId !== null)
                .sort((a, b) => (a.listener.lastForwardedId! < b.listener.lastForwardedId! ? 1 : -1))[0];
              if (latest === undefined || !latest.listener.replayLast()) first.info('nothing to replay yet');
            },
            quit: () => stop.trigger(),
            interrupt: () => stop.trigger(),
          });
    // A listener that fails (its endpoint deleted, a refused key) stops the others.
    const failed = new AbortController();
    const signal = several ? AbortSignal.any([stop.signal, failed.signal]) : stop.signal;
    let outcomes: PromiseSettledResult<void>[];
    try {
      outcomes = await Promise.allSettled(
        running.map(({ listener }) =>
          listener.run(signal).catch((error: unknown) => {
            failed.abort();
            throw error;
          }),
        ),
      );
    } finally {
      releaseKeys();
      await Promise.all(running.map(({ forwarder }) => forwarder.close()));
    }
    const failure = outcomes.find((outcome) => outcome.status === 'rejected');
    if (failure !== undefined) throw failure.reason;
    for (const { channel, listener } of running) {
      channel.output.stopped(
        `stopped. ${listener.cursor === null ? 'No cursor yet.' : `Listener "${channel.store.slot}" resumes after ${listener.cursor} (${channel.store.file}).`}`,
      );
    }
  } finally {
    for (const off of offs) off();
    for (const channel of channels) {
      channel.output.close();
      await channel.store.release();
    }
    process.off('exit', releaseOnExit);
  }
}
