import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { HookrelayApiError, type HookrelayClient } from '@hookrelay/shared/client';
import { newApiKey } from '@hookrelay/shared/ids';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { CONFIG_DIR_MODE } from '../config.js';
import { DEV_DEFAULT_PORT, devDataDir, devPublicUrl, launchEmbeddedServer } from '../dev/early-start.js';
import { EmbeddedServerError, type EmbeddedServer } from '../dev/embedded-server.js';
import { readDevState, readServerBootstrapKey, SERVER_DATABASE_DIR, writeDevState, type DevState } from '../dev/state.js';
import { CliErrorCode, CliFailure, usageFailure } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import { inspectorUrl } from '../inspector.js';
import { forwardingFlags, forwardingSettings } from '../flags/forwarding.js';
import { StopSignals } from '../signals.js';
import { parseDuration } from '../listen/duration.js';
import { removeRunningDev, writeRunningDev } from '../dev/running.js';
import { freeLocalPort, startTunnel, TUNNEL_PROGRAMS, type Tunnel, type TunnelProgram } from '../dev/tunnel.js';
import { terminalText } from '../format/text.js';

/** A new data dir comes from the server's template in about a second; without one, PGlite's initdb takes several, more on a slow CI machine. */
const START_TIMEOUT_MS = 120_000;
/** The cursor profile of `dev`: its cursors live in the dev data dir, apart from real profiles'. */
const DEV_PROFILE = 'dev';
export const DEV_ENDPOINT_NAME = 'hookrelay dev';

/** The first NDJSON line of `dev --json`. */
export interface DevReadyLine {
  type: 'ready';
  ingest_url: string;
  inbound_endpoint_id: string;
  api_url: string;
  /** The web inspector on the endpoint's live messages; the API key rides in the fragment. */
  inspector_url: string;
  /** `--tunnel`: the program and the public URL it gave (the base of `ingest_url`); null without one. */
  tunnel: { program: TunnelProgram; public_url: string } | null;
}

/**
 * `--tunnel` may stand alone (cloudflared) or name the program: oclif flags take a value, so a bare
 * `--tunnel` gets `cloudflared` written after it before parsing.
 */
export function withTunnelDefault(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    out.push(arg);
    if (arg === '--') {
      out.push(...argv.slice(i + 1));
      break;
    }
    const next = argv[i + 1];
    if (arg === '--tunnel' && (next === undefined || !(TUNNEL_PROGRAMS as readonly string[]).includes(next))) out.push('cloudflared');
  }
  return out;
}

export default class Dev extends BaseCommand<typeof Dev> {
  protected static override usesRunningDev = false;
  static override summary = 'Local development in one command: an embedded hookrelay server, a cli-mode endpoint, and a listener forwarding to your app.';
  static override description = `Starts hookrelay-server on 127.0.0.1 (embedded PostgreSQL in the data dir, nothing to install), creates a cli-mode inbound endpoint, prints its ingest URL, and forwards every webhook posted to it to --forward-to (or the routes of ./hookrelay.json), exactly like \`hookrelay listen\` (same order, exact bytes, held while your app restarts; p/r/q keys in a terminal). Ctrl-C stops the listener, then the server, and exits 0.

The data dir (default $HOOKRELAY_CONFIG_DIR/dev, i.e. ~/.config/hookrelay/dev) keeps the database, the server's API key and the endpoint (dev.json, mode 0600), the listener's cursor and the server's log (server.log): a restart reuses the same key, endpoint and ingest URL. Delete the directory to start afresh. While dev runs, other commands of this user (trigger, open, inbound …) use its server and key without flags: dev keeps dev-running.json in the CLI's configuration directory and removes it on exit (an address or a profile named by flag or environment still wins).

The dev server allows private network destinations (HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true), so forward-mode endpoints may point at localhost. It ignores DATABASE_URL and other HOOKRELAY_* settings of your shell.

Output for people goes to stderr. The banner also prints the web inspector's URL for the endpoint (\`hookrelay open\` prints it too): it carries the API key in its fragment, so treat it like the key.

With --json, stdout carries {"type":"ready","ingest_url","inbound_endpoint_id","api_url","inspector_url"} as the first line, then one line per delivery as \`listen --json\` prints them.`;

  static override examples = [
    {
      description: 'Forward to http://localhost:3000:',
      command: '<%= config.bin %> <%= command.id %> --forward-to 3000',
    },
    {
      description: 'Into a path of your app, with the server on another port:',
      command: '<%= config.bin %> <%= command.id %> --forward-to 3000/webhooks --port 9000',
    },
    {
      description: "With the team's routes from ./hookrelay.json (or several -f PATH-PREFIX=TARGET):",
      command: '<%= config.bin %> <%= command.id %>',
    },
    {
      description: 'A public URL that providers can reach, through a Cloudflare quick tunnel (cloudflared must be installed):',
      command: '<%= config.bin %> <%= command.id %> -f 3000 --tunnel',
    },
    {
      description: 'The same through ngrok:',
      command: '<%= config.bin %> <%= command.id %> -f 3000 --tunnel ngrok',
    },
    {
      description: 'Behind a tunnel or proxy you run yourself, so that ingest URLs carry its address:',
      command: '<%= config.bin %> <%= command.id %> -f 3000 --public-url https://abc123.ngrok.app',
    },
    {
      description: 'In a script: the ingest URL from the first line:',
      command: "<%= config.bin %> <%= command.id %> -f 3000 --json | head -1 | jq -r .ingest_url",
    },
  ];

  static override flags = {
    ...forwardingFlags,
    port: Flags.integer({ summary: 'Port of the embedded server on 127.0.0.1.', default: DEV_DEFAULT_PORT, min: 1, max: 65_535 }),
    'data-dir': Flags.string({ summary: 'Where the embedded server keeps its data. Default: $HOOKRELAY_CONFIG_DIR/dev.' }),
    'public-url': Flags.string({ summary: 'Base of ingest URLs when a tunnel or proxy forwards to the server (default http://127.0.0.1:PORT).', exclusive: ['tunnel'] }),
    tunnel: Flags.string({
      summary: 'Start a tunnel (cloudflared, the default, or ngrok) to an ingest-only port and use its public https URL for every ingest URL.',
      options: [...TUNNEL_PROGRAMS],
    }),
    'tunnel-timeout': Flags.string({ summary: 'How long the tunnel program may take to print its public URL.', default: '30s' }),
  };

  public override async init(): Promise<void> {
    this.argv = withTunnelDefault(this.argv);
    await super.init();
  }

  /** Streams NDJSON itself under --json: the return value is not printed. */
  public async run(): Promise<void> {
    const forwarding = forwardingSettings(this.flags);
    const port = this.flags.port;
    let publicUrl = devPublicUrl(this.flags['public-url'], port);
    if (publicUrl === undefined) {
      throw usageFailure(`--public-url: "${this.flags['public-url']}" is not an http or https URL`, "Give the tunnel's address, such as https://abc123.ngrok.app.");
    }
    const tunnelProgram = this.flags.tunnel as TunnelProgram | undefined;
    let tunnelTimeoutMs: number;
    try {
      tunnelTimeoutMs = parseDuration(this.flags['tunnel-timeout']);
    } catch (error) {
      throw usageFailure(`--tunnel-timeout: ${(error as Error).message}`);
    }
    const dataDir = devDataDir(this.flags['data-dir'], this.env, homedir());
    await mkdir(dataDir, { recursive: true, mode: CONFIG_DIR_MODE });
    const state = await this.loadState(dataDir);
    const apiKey = state.api_key ?? '';
    const logFile = join(dataDir, 'server.log');
    const styleErr = this.style.err;

    const stop = new StopSignals({ signals: ['SIGINT', 'SIGTERM', 'SIGHUP'] }).install();
    let server: EmbeddedServer | undefined;
    let tunnel: Tunnel | undefined;
    let ingestPort: number | undefined;
    let crashed: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let markerWritten = false;
    let stoppingServer = false;
    let listening = false;
    try {
      if (tunnelProgram !== undefined) {
        // The tunnel first: its address is the server's public URL, and the server takes it at start.
        ingestPort = await freeLocalPort();
        this.note(styleErr.dim(`starting ${tunnelProgram} to the ingest-only port 127.0.0.1:${ingestPort}…`));
        try {
          tunnel = await startTunnel(tunnelProgram, ingestPort, this.env, tunnelTimeoutMs, stop.signal);
        } catch (error) {
          if (stop.stopping) return;
          throw error;
        }
        publicUrl = tunnel.url;
        const running = tunnel;
        void running.exited.then(() => {
          if (!stop.stopping) this.warning(`${running.program} exited: ${running.url} no longer reaches this machine (stop with Ctrl-C and start again)`);
        });
      }
      this.note(styleErr.dim(`starting the embedded server on 127.0.0.1:${port} (data in ${dataDir})…`));
      // The server bin/run.js started for this command line, if it did (src/dev/early-start.ts).
      server = await launchEmbeddedServer({ dataDir, port, apiKey, publicUrl, ingestPort, env: this.env, logFile });
      // Loaded while the server starts (in its own process, on another core), not before it.
      const listenSession = import('../listen/session.js');
      listenSession.catch(() => {}); // awaited below; a failure to load is reported there
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

      const client = this.createClient(apiUrl, apiKey);
      const endpoint = await this.devEndpoint(client, dataDir, state);
      if (stop.stopping) return;
      // Other commands of this user now use this server without flags, while this process lives.
      await writeRunningDev(dirname(this.configPath), { pid: process.pid, api_url: apiUrl, data_dir: dataDir, inbound_endpoint_id: endpoint.id });
      markerWritten = true;

      if (this.jsonEnabled()) {
        const ready: DevReadyLine = {
          type: 'ready',
          ingest_url: endpoint.ingestUrl,
          inbound_endpoint_id: endpoint.id,
          api_url: apiUrl,
          inspector_url: inspectorUrl(apiUrl, apiKey, endpoint.id),
          tunnel: tunnel === undefined ? null : { program: tunnel.program, public_url: tunnel.url },
        };
        process.stdout.write(`${JSON.stringify(ready)}\n`);
      }
      const { runListenSession } = await listenSession;
      await runListenSession({
        client,
        apiUrl,
        apiKey,
        userAgent: `hookrelay-cli/${this.config.version}`,
        endpointId: endpoint.id,
        latestMessageId: endpoint.latestMessageId,
        cursorRoot: dataDir,
        profile: DEV_PROFILE,
        forwarding,
        start: { withoutCursor: 'first-message' },
        json: this.jsonEnabled(),
        style: styleErr,
        stop,
        keys: process.stdin,
        bannerPrefix: [
          `${styleErr.green('hookrelay dev')}: embedded server at ${apiUrl} ${styleErr.dim(`(data ${dataDir}, log ${logFile})`)}`,
          '',
          styleErr.bold('Ingest URL (send webhooks here):'),
          `  ${styleErr.cyan.bold(terminalText(endpoint.ingestUrl))}`,
          ...(tunnel === undefined
            ? [styleErr.dim('  Reachable from this machine only: providers need `hookrelay dev --tunnel` or a hookrelay server on a public host.')]
            : [styleErr.dim(`  Public through ${tunnel.program} (to the ingest-only port 127.0.0.1:${ingestPort}; the API stays on 127.0.0.1:${port}).`)]),
          styleErr.bold('Inspector (every webhook, its bytes, your app\'s answers, replay):'),
          `  ${styleErr.cyan(inspectorUrl(apiUrl, apiKey, endpoint.id))}`,
          styleErr.dim('  Other commands in another terminal (trigger, open, inbound …) use this server while dev runs.'),
          '',
        ],
      });
    } finally {
      if (markerWritten) await removeRunningDev(dirname(this.configPath), process.pid);
      // Whatever happened, the server does not outlive the command.
      if (server !== undefined) {
        stoppingServer = true;
        if (server.running) this.note(styleErr.dim('stopping the embedded server…'));
        const info = await server.stop();
        if (listening && crashed === undefined && info.code !== 0 && info.code !== null) {
          this.warning(`the embedded server exited with code ${info.code}; its output is in ${logFile}`);
        }
      }
      // After the server: nothing reaches it through the tunnel once the tunnel is gone.
      if (tunnel !== undefined) {
        this.note(styleErr.dim(`stopping ${tunnel.program}…`));
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
  private async loadState(dataDir: string): Promise<DevState> {
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

  /** The stored cli-mode endpoint if it still exists, else a new one (remembered for the next run). */
  private async devEndpoint(client: HookrelayClient, dataDir: string, state: DevState): Promise<{ id: string; ingestUrl: string; latestMessageId: string | null }> {
    if (state.inbound_endpoint_id !== undefined) {
      try {
        const { data } = await client.inboundEndpoints.get(state.inbound_endpoint_id);
        if (data.mode === 'cli') return { id: data.id, ingestUrl: data.ingest_url, latestMessageId: data.latest_message_id ?? null };
        this.warning(`the dev endpoint ${data.id} was switched to forward mode; creating a new cli-mode endpoint`);
      } catch (error) {
        if (!(error instanceof HookrelayApiError && error.code === 'ENDPOINT_NOT_FOUND')) throw error;
      }
    }
    const { data } = await client.inboundEndpoints.create({ name: DEV_ENDPOINT_NAME, mode: 'cli', description: 'created by `hookrelay dev`' });
    await writeDevState(dataDir, { ...state, inbound_endpoint_id: data.id });
    // A new endpoint has no messages yet.
    return { id: data.id, ingestUrl: data.ingest_url, latestMessageId: null };
  }
}
