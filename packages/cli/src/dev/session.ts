import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { SampleProvider } from '@hookrelay/shared';
import type { HookrelayClient } from '@hookrelay/shared/client';
import { newApiKey } from '@hookrelay/shared/ids';
import { CONFIG_DIR_MODE, type Env } from '../config.js';
import { CliErrorCode, CliFailure } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import type { Style } from '../format/style.js';
import { terminalText } from '../format/text.js';
import { inspectorUrl } from '../inspector.js';
import type { VerifySetting } from '../flags/verify.js';
import type { ForwardRoute } from '../listen/routes.js';
import type { ForwardingSettings, ListenStart } from '../listen/session.js';
import { StopSignals } from '../signals.js';
import { launchEmbeddedServer } from './early-start.js';
import { EmbeddedServerError, type EmbeddedServer } from './embedded-server.js';
import type { DevEndpoint } from './endpoints.js';
import { removeRunningDev, writeRunningDev } from './running.js';
import { readDevState, readServerBootstrapKey, SERVER_DATABASE_DIR, writeDevState, type DevState } from './state.js';
import { freeLocalPort, startTunnel, type Tunnel, type TunnelProgram } from './tunnel.js';

/** A new data dir comes from the server's template in about a second; without one, PGlite's initdb takes several, more on a slow CI machine. */
const START_TIMEOUT_MS = 120_000;
/** The cursor profile of `dev`: its cursors live in the dev data dir, apart from real profiles'. */
const DEV_PROFILE = 'dev';

/** One endpoint of the ready line. */
export interface DevReadyEndpoint {
  /** The provider it verifies (`--verify`); null for the one that verifies nothing. */
  provider: SampleProvider | null;
  inbound_endpoint_id: string;
  ingest_url: string;
  /** The web inspector on the endpoint's live messages; the API key rides in the fragment. */
  inspector_url: string;
}

/**
 * The first NDJSON line of `dev --json`. `ingest_url`, `inbound_endpoint_id` and `inspector_url`
 * are those of the first of `endpoints` (the only one without --verify).
 */
export interface DevReadyLine {
  type: 'ready';
  ingest_url: string;
  inbound_endpoint_id: string;
  api_url: string;
  inspector_url: string;
  /** `--tunnel`: the program and the public URL it gave (the base of `ingest_url`); null without one. */
  tunnel: { program: TunnelProgram; public_url: string } | null;
  /** Every endpoint dev forwards from, in the order of --verify. */
  endpoints: DevReadyEndpoint[];
}

/** A provider dev verifies (`--verify`), with the routes of its endpoint. */
export interface DevVerify extends VerifySetting {
  routes: ForwardRoute[];
}

export interface DevSessionOptions {
  forwarding: ForwardingSettings;
  /** One endpoint per provider, in this order; empty: one endpoint that verifies nothing. */
  verify: readonly DevVerify[];
  /** `--since`: where every endpoint's listener starts (else its cursor, or its first message). */
  since?: ListenStart['since'];
  /** The embedded server's port on 127.0.0.1. */
  port: number;
  /** The base of ingest URLs (`--public-url`, or the server's own address); a tunnel's URL replaces it. */
  publicUrl: string;
  /** `--tunnel`: the program, and how long it may take to print its public URL. */
  tunnel?: { program: TunnelProgram; timeoutMs: number } | undefined;
  dataDir: string;
  env: Env;
  /** The CLI's configuration directory: other commands find the running dev there (dev-running.json). */
  configDir: string;
  userAgent: string;
  createClient(apiUrl: string, apiKey: string): HookrelayClient;
  json: boolean;
  /** Colours of stderr. */
  style: Style;
  /** A line for people on stderr (none under --json). */
  note(text: string): void;
  /** A warning on stderr, also under --json. */
  warning(text: string): void;
  /** Writes the first line of --json. */
  printReady(line: DevReadyLine): void;
  /** Where p/r/q are read from. */
  keys?: NodeJS.ReadStream | undefined;
}

/**
 * `hookrelay dev` once its flags are parsed: the tunnel (if asked for), the embedded server, the
 * dev endpoint, then a listen session on it until Ctrl-C; then the server, then the tunnel, are
 * stopped, whatever happened. A server that stops by itself ends the session with an error.
 */
export async function runDevSession(options: DevSessionOptions): Promise<void> {
  const { dataDir, port, style } = options;
  await mkdir(dataDir, { recursive: true, mode: CONFIG_DIR_MODE });
  const state = await loadState(dataDir);
  const apiKey = state.api_key ?? '';
  const logFile = join(dataDir, 'server.log');
  let publicUrl = options.publicUrl;

  const stop = new StopSignals({ signals: ['SIGINT', 'SIGTERM', 'SIGHUP'] }).install();
  let server: EmbeddedServer | undefined;
  let tunnel: Tunnel | undefined;
  let ingestPort: number | undefined;
  let crashed: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let markerWritten = false;
  let stoppingServer = false;
  let listening = false;
  try {
    if (options.tunnel !== undefined) {
      const { program, timeoutMs } = options.tunnel;
      // The tunnel first: its address is the server's public URL, and the server takes it at start.
      ingestPort = await freeLocalPort();
      options.note(style.dim(`starting ${program} to the ingest-only port 127.0.0.1:${ingestPort}…`));
      try {
        tunnel = await startTunnel(program, ingestPort, options.env, timeoutMs, stop.signal);
      } catch (error) {
        if (stop.stopping) return;
        throw error;
      }
      publicUrl = tunnel.url;
      const running = tunnel;
      void running.exited.then(() => {
        if (!stop.stopping) options.warning(`${running.program} exited: ${running.url} no longer reaches this machine (stop with Ctrl-C and start again)`);
      });
    }
    options.note(style.dim(`starting the embedded server on 127.0.0.1:${port} (data in ${dataDir})…`));
    // The server bin/run.js started for this command line, if it did (src/dev/early-start.ts).
    server = await launchEmbeddedServer({ dataDir, port, apiKey, publicUrl, ingestPort, env: options.env, logFile });
    // Loaded while the server starts (in its own process, on another core), not before it.
    const listenSession = import('../listen/session.js');
    const endpointsModule = import('./endpoints.js');
    // Awaited below; a failure to load is reported there.
    listenSession.catch(() => {});
    endpointsModule.catch(() => {});
    const running = server;
    let apiUrl: string | undefined;
    try {
      apiUrl = await server.waitUntilListening(START_TIMEOUT_MS, stop.signal);
    } catch (error) {
      if (error instanceof EmbeddedServerError) throw new CliFailure(CliErrorCode.CLI_ERROR, error.message, ExitCode.GENERIC, error.hint);
      throw error;
    }
    if (apiUrl === undefined) return; // Ctrl-C while it started.
    listening = true;
    // From now on the server going away is a failure, not a way to stop.
    void running.exited.then((info) => {
      if (!stop.stopping && !stoppingServer) {
        crashed = info;
        stop.trigger();
      }
    });

    const client = options.createClient(apiUrl, apiKey);
    const { devEndpoints } = await endpointsModule;
    const endpoints = await devEndpoints(client, dataDir, state, options.verify, options.warning);
    if (stop.stopping) return;
    const first = endpoints[0]!;
    // Other commands of this user now use this server without flags, while this process lives.
    await writeRunningDev(options.configDir, {
      pid: process.pid,
      api_url: apiUrl,
      data_dir: dataDir,
      inbound_endpoint_id: first.id,
      endpoints: endpoints.map((endpoint) => ({ provider: endpoint.provider, inbound_endpoint_id: endpoint.id })),
    });
    markerWritten = true;

    if (options.json) {
      const listed = endpoints.map((endpoint) => ({
        provider: endpoint.provider,
        inbound_endpoint_id: endpoint.id,
        ingest_url: endpoint.ingestUrl,
        inspector_url: inspectorUrl(apiUrl!, apiKey, endpoint.id),
      }));
      options.printReady({
        type: 'ready',
        ingest_url: first.ingestUrl,
        inbound_endpoint_id: first.id,
        api_url: apiUrl,
        inspector_url: listed[0]!.inspector_url,
        tunnel: tunnel === undefined ? null : { program: tunnel.program, public_url: tunnel.url },
        endpoints: listed,
      });
    }
    const { runListenSession } = await listenSession;
    await runListenSession({
      client,
      apiUrl,
      apiKey,
      userAgent: options.userAgent,
      endpoints: endpoints.map((endpoint) => ({
        endpointId: endpoint.id,
        latestMessageId: endpoint.latestMessageId,
        ...(endpoint.provider === null ? {} : { label: endpoint.provider, routes: options.verify.find((one) => one.provider === endpoint.provider)!.routes }),
      })),
      cursorRoot: dataDir,
      profile: DEV_PROFILE,
      forwarding: options.forwarding,
      start: { withoutCursor: 'first-message', since: options.since },
      json: options.json,
      style,
      stop,
      keys: options.keys,
      bannerPrefix: [
        `${style.green('hookrelay dev')}: embedded server at ${apiUrl} ${style.dim(`(data ${dataDir}, log ${logFile})`)}`,
        '',
        ...ingestLines(endpoints, style),
        ...(tunnel === undefined
          ? [style.dim('  Reachable from this machine only: providers need `hookrelay dev --tunnel` or a hookrelay server on a public host.')]
          : [style.dim(`  Public through ${tunnel.program} (to the ingest-only port 127.0.0.1:${ingestPort}; the API stays on 127.0.0.1:${port}).`)]),
        style.bold('Inspector (every webhook, its bytes, your app\'s answers, replay):'),
        // Several endpoints: the page that lists them all.
        `  ${style.cyan(inspectorUrl(apiUrl, apiKey, endpoints.length === 1 ? first.id : undefined))}`,
        style.dim('  Other commands in another terminal (trigger, open, inbound …) use this server while dev runs.'),
        '',
      ],
    });
  } finally {
    if (markerWritten) await removeRunningDev(options.configDir, process.pid);
    // Whatever happened, the server does not outlive the command.
    if (server !== undefined) {
      stoppingServer = true;
      if (server.running) options.note(style.dim('stopping the embedded server…'));
      const info = await server.stop();
      if (listening && crashed === undefined && info.code !== 0 && info.code !== null) {
        options.warning(`the embedded server exited with code ${info.code}; its output is in ${logFile}`);
      }
    }
    // After the server: nothing reaches it through the tunnel once the tunnel is gone.
    if (tunnel !== undefined) {
      options.note(style.dim(`stopping ${tunnel.program}…`));
      await tunnel.stop();
    }
    stop.dispose();
  }
  if (crashed !== undefined) {
    throw new CliFailure(
      CliErrorCode.CLI_ERROR,
      `the embedded server stopped unexpectedly (${crashed.signal ?? `code ${crashed.code}`})`,
      ExitCode.GENERIC,
      `Its output is in ${logFile}.`,
    );
  }
}

/**
 * The dev API key: the stored one, else (a data dir the server set up itself) the key it wrote,
 * else a new one, saved before the server starts so that it becomes the bootstrap key.
 */
async function loadState(dataDir: string): Promise<DevState> {
  const state = await readDevState(dataDir);
  if (state.api_key !== undefined) return state;
  const serverKey = await readServerBootstrapKey(dataDir);
  if (serverKey !== undefined) {
    state.api_key = serverKey;
  } else if (existsSync(join(dataDir, SERVER_DATABASE_DIR))) {
    throw new CliFailure(
      CliErrorCode.CONFIG_ERROR,
      `${dataDir} holds a hookrelay database but not its API key (dev.json)`,
      ExitCode.GENERIC,
      'Delete that directory to start afresh, or pass another --data-dir.',
    );
  } else {
    state.api_key = newApiKey();
  }
  await writeDevState(dataDir, state);
  return state;
}

/** The ingest URLs set apart: the one, or each provider's with what it verifies and how to send it a sample. */
function ingestLines(endpoints: readonly DevEndpoint[], style: Style): string[] {
  if (endpoints.length === 1 && endpoints[0]!.provider === null) {
    return [style.bold('Ingest URL (send webhooks here):'), `  ${style.cyan.bold(terminalText(endpoints[0]!.ingestUrl))}`];
  }
  const width = Math.max(...endpoints.map((endpoint) => (endpoint.provider ?? '').length));
  return [
    style.bold(endpoints.length === 1 ? 'Ingest URL (send webhooks here; it checks the signature):' : "Ingest URLs (send each provider's webhooks to its own; each checks the signature):"),
    ...endpoints.map((endpoint) => `  ${(endpoint.provider ?? '').padEnd(width)}  ${style.cyan.bold(terminalText(endpoint.ingestUrl))}`),
    style.dim(`  Signed samples: hookrelay trigger ${endpoints[0]!.provider} EVENT (hookrelay trigger --list shows the events).`),
  ];
}
