import { homedir } from 'node:os';
import { dirname } from 'node:path';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { DEV_DEFAULT_PORT, devDataDir, devPublicUrl } from '../dev/early-start.js';
import { runDevSession } from '../dev/session.js';
import { TUNNEL_PROGRAMS, type TunnelProgram } from '../dev/tunnel.js';
import { usageFailure } from '../errors.js';
import { forwardingFlags, forwardingSettings } from '../flags/forwarding.js';
import { sinceCursor } from '../flags/time.js';
import { routesByProvider, verifyFlag, verifySettings } from '../flags/verify.js';
import { parseDuration } from '../listen/duration.js';

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

Verification: --verify PROVIDER=SECRET (github, stripe, slack, shopify, standard_webhooks; repeat it) makes one endpoint per provider instead, each checking its provider's signatures with SECRET (env:NAME reads the environment variable NAME, which keeps the secret out of the process list), each with its own ingest URL, all kept across restarts (dev.json) and all forwarded; --forward-to stripe=4000 sends one provider's webhooks elsewhere (the first matching route wins). Without --verify, the "verify" object of hookrelay.json ({"verify":{"github":"env:GITHUB_WEBHOOK_SECRET"}}) is used when there is one. While dev runs, \`hookrelay trigger github push\` in another terminal sends a sample to dev's github endpoint, signed by the server with that secret, so your app's own check passes.

--since 2h|<ISO 8601 time>|<message id> starts every endpoint's listener with what arrived since, as \`listen --since\` does; without it each resumes after its cursor (or starts with its endpoint's first message).

The dev server allows private network destinations (HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true), so forward-mode endpoints may point at localhost. It ignores DATABASE_URL and other HOOKRELAY_* settings of your shell.

Output for people goes to stderr. The banner also prints the web inspector's URL for the endpoint (\`hookrelay open\` prints it too): it carries the API key in its fragment, so treat it like the key.

With --json, stdout carries {"type":"ready","ingest_url","inbound_endpoint_id","api_url","inspector_url","tunnel","endpoints":[{"provider","inbound_endpoint_id","ingest_url","inspector_url"}]} as the first line (the top-level endpoint fields are those of the first endpoint), then one line per delivery as \`listen --json\` prints them.`;

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
      description: "GitHub and Stripe, each checked with its own secret; Stripe's webhooks to port 4000, the rest to 3000:",
      command: '<%= config.bin %> <%= command.id %> --verify github=env:GITHUB_WEBHOOK_SECRET --verify stripe=env:STRIPE_WEBHOOK_SECRET -f stripe=4000 -f 3000',
    },
    {
      description: 'Forward again what arrived in the last 2 hours, then go on:',
      command: '<%= config.bin %> <%= command.id %> -f 3000 --since 2h',
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
    verify: verifyFlag,
    since: Flags.string({
      summary: "Start every endpoint's listener with what arrived since: a duration (10m, 2h), an ISO 8601 time, or a message id (that message first).",
    }),
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
    const verify = verifySettings(this.flags, this.env, process.cwd());
    const byProvider = routesByProvider(forwarding.routes, forwarding.routesFrom, verify);
    const since = this.flags.since === undefined ? undefined : { text: this.flags.since, cursor: sinceCursor(this.flags.since, this.now().getTime()) };
    const port = this.flags.port;
    const publicUrl = devPublicUrl(this.flags['public-url'], port);
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
    await runDevSession({
      forwarding,
      verify: verify.map((setting, index) => ({ ...setting, routes: byProvider[index]!.routes })),
      since,
      port,
      publicUrl,
      tunnel: tunnelProgram === undefined ? undefined : { program: tunnelProgram, timeoutMs: tunnelTimeoutMs },
      dataDir: devDataDir(this.flags['data-dir'], this.env, homedir()),
      env: this.env,
      configDir: dirname(this.configPath),
      userAgent: `hookrelay-cli/${this.config.version}`,
      createClient: (apiUrl, apiKey) => this.createClient(apiUrl, apiKey),
      json: this.jsonEnabled(),
      style: this.style.err,
      note: (text) => this.note(text),
      warning: (text) => this.warning(text),
      printReady: (line) => process.stdout.write(`${JSON.stringify(line)}\n`),
      keys: process.stdin,
    });
  }
}
