import { homedir } from 'node:os';
import { isUuid } from '@hookrelay/shared/ids';
import { HookrelayApiError, HookrelayWrongServerError, type HookrelayClient } from '@hookrelay/shared/client';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { configDirectory } from '../config.js';
import { usageFailure } from '../errors.js';
import { durationFlag, forwardingFlags, forwardingSettings } from '../flags/forwarding.js';
import { sinceCursor } from '../flags/time.js';
import { runListenSession } from '../listen/session.js';
import { StopSignals } from '../signals.js';

/** How long the check before the banner waits for the server; the listener's own reconnection takes over after. */
const CHECK_TIMEOUT_MS = 10_000;

/**
 * A refused key or an unknown endpoint is the whole answer: it ends `listen` before the banner (which
 * says forwarding has begun) and before a cursor slot is claimed. A server that is down or failing
 * is not an answer: the listener starts and reconnects until it is back, as it does later on.
 */
async function checkEndpoint(client: HookrelayClient, endpointId: string): Promise<void> {
  try {
    await client.inboundEndpoints.get(endpointId, { signal: AbortSignal.timeout(CHECK_TIMEOUT_MS) });
  } catch (error) {
    if (error instanceof HookrelayApiError && error.status < 500 && error.status !== 429) throw error;
    if (error instanceof HookrelayWrongServerError) throw error;
  }
}

export default class Listen extends BaseCommand<typeof Listen> {
  static override summary = 'Forward the webhooks of a cli-mode inbound endpoint to your local app, in order, without losing one.';
  static override description = `Every webhook posted to the endpoint's ingest URL is sent to --forward-to exactly as it was received: the same method, the sub-path after the token appended to the target path, the query, the original header lines (hop-by-hop ones removed, Host set to the target unless --preserve-host) and the exact body bytes, checked against their SHA-256. Provider signatures (GitHub, Stripe, Slack, …) therefore verify in your app.

Routes: --forward-to may be repeated as [PROVIDER=][PATH-PREFIX|event:GLOB=]TARGET, the first match wins (stripe=4000 takes the webhooks whose headers are Stripe's; /stripe=4000 takes <ingest URL>/stripe/… with the prefix removed; event:push=3000/github takes GitHub push events; a plain TARGET takes everything; a message no route takes is skipped). Without --forward-to the routes come from hookrelay.json in the current directory (or --config): {"routes":[{"provider":"stripe","forward_to":"4000"},{"event":"push","forward_to":"3000/github"},{"forward_to":"3000"}]} (its "verify" is dev's, and listen ignores it).

Filters: --events push,pull_request (globs: checkout.*) and --path '/github/*' are applied by the server, so what does not match is never sent; skipped messages still move the cursor.

Messages are forwarded one at a time, in the order they were received. After each one the listener saves the id of the last message processed in the config dir (cursors/<profile>/<endpoint-id>[.<name>].json) and reports your app's answer to the server. A restart resumes after that id, so what arrived while the listener was stopped is delivered, once. The first run on an endpoint starts from now; --since, --from-start and --skip-backlog choose another start. A second listener on the same endpoint and machine gets a cursor of its own (--name, default: the first free slot).

When your app cannot be reached (connection refused, while it restarts), the message is held and retried with backoff (250 ms doubling to 5 s), in order, rather than skipped; --max-wait bounds how long. An HTTP answer of any status is final: it is reported, not retried. --timeout 0 waits as long as the app takes (a breakpoint). An https:// app with a self-signed certificate: --ca-file cert.pem, or --insecure (loopback targets only).

In a terminal (not with --json): p pauses and resumes forwarding (messages wait, in order), r forwards the last message again, q quits.

The connection is a WebSocket (--transport auto, the default), watched by heartbeat: the server pings every 15 s and a connection silent for --heartbeat-timeout is dropped and reopened. When the WebSocket cannot be used (a proxy refuses the upgrade, or it keeps dropping) the listener polls instead and tries the WebSocket again from time to time.

Output for people goes to stderr, one line per delivery naming the provider and event type; a non-2xx answer shows the first 200 bytes of the app's body under its line, --verbose the whole answer (headers, first --capture-response-bytes of the body). A message delivered minutes after its sender signed it (Stripe, Slack, Standard Webhooks) goes re-signed by the server with the endpoint's --hmac-secret, and its line says so; without that secret the line warns that the app's check will likely refuse it. With --json, stdout carries one JSON object per delivery: {"message_id","cursor","method","path","status","latency_ms","attempt","error","target","provider","event_type","resigned","response_headers","response_body","response_body_truncated"}, and nothing else.

It reads the endpoint (GET /v1/inbound-endpoints/{id}) before anything else, so a refused API key or an unknown endpoint ends it with its error alone. Ctrl-C (or SIGTERM) stops after the delivery in flight and exits 0. Exit codes: 2 bad flags, a bad hookrelay.json, --insecure with a non-loopback target or a forward-mode endpoint, 3 bad API key, 4 unknown endpoint, 5 --name already running, 7 --exit-on-disconnect reached.`;

  static override examples = [
    {
      description: 'Forward to http://localhost:3000:',
      command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --forward-to 3000',
    },
    {
      description: 'Into a path of your app (/webhooks/github/push for a webhook posted to <ingest URL>/github/push):',
      command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --forward-to 3000/webhooks',
    },
    {
      description: 'Two apps: <ingest URL>/stripe/… to port 4000, GitHub push events to 3000/github, the rest to 3000:',
      command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 -f /stripe=4000 -f event:push=3000/github -f 3000',
    },
    {
      description: 'Only GitHub push and pull_request events (the server skips the rest):',
      command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 -f 3000 --events push,pull_request',
    },
    {
      description: "The team's routes, from ./hookrelay.json:",
      command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70',
    },
    {
      description: 'An https app with a self-signed certificate, no time limit while you debug, its answers shown:',
      command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 -f https://localhost:8443/hooks --ca-file ./certs/localhost.pem --timeout 0 --verbose',
    },
    {
      description: 'Replay the last 10 minutes first, to a full URL:',
      command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 -f http://127.0.0.1:8080/hooks --since 10m',
    },
    {
      description: 'Machine-readable, one line per delivery; show the failures:',
      command: "<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 -f 3000 --json | jq -c 'select(.status == null or .status >= 400)'",
    },
    {
      description: 'Under a supervisor: poll over plain HTTPS, give a message 1 minute, exit 7 after 5 minutes without the server:',
      command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 -f 3000 --transport poll --max-wait 1m --exit-on-disconnect 5m',
    },
    {
      description: 'A second listener on the same endpoint with a cursor of its own:',
      command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 -f 4000 --name staging-copy',
    },
  ];

  static override args = {
    'endpoint-id': Args.string({ description: 'Id of a cli-mode inbound endpoint (a UUID).', required: true }),
  };

  static override flags = {
    'forward-to': forwardingFlags['forward-to'],
    config: forwardingFlags.config,
    events: forwardingFlags.events,
    path: forwardingFlags.path,
    transport: forwardingFlags.transport,
    name: Flags.string({ summary: 'Name of this listener, and so of its cursor (default: the first free slot: default, 2, 3, …).' }),
    since: Flags.string({
      summary: 'Start with what arrived since: a duration (10m, 2h), an ISO 8601 time, or a message id (that message first).',
      exclusive: ['from-start', 'skip-backlog'],
    }),
    'from-start': Flags.boolean({ summary: "Start with the endpoint's first stored message.", exclusive: ['since', 'skip-backlog'] }),
    'skip-backlog': Flags.boolean({ summary: 'Start from now, skipping what arrived since the last run.', exclusive: ['since', 'from-start'] }),
    'preserve-host': forwardingFlags['preserve-host'],
    'max-wait': forwardingFlags['max-wait'],
    timeout: forwardingFlags.timeout,
    'ca-file': forwardingFlags['ca-file'],
    insecure: forwardingFlags.insecure,
    'capture-response-bytes': forwardingFlags['capture-response-bytes'],
    verbose: forwardingFlags.verbose,
    'exit-on-disconnect': Flags.string({ summary: 'Exit (code 7) when the server has been unreachable this long, for supervisors.' }),
    'heartbeat-timeout': forwardingFlags['heartbeat-timeout'],
  };

  /** Streams NDJSON itself under --json: the return value is not printed. */
  public async run(): Promise<void> {
    const endpointId = this.args['endpoint-id'].toLowerCase();
    if (!isUuid(endpointId)) {
      throw usageFailure(`"${this.args['endpoint-id']}" is not an inbound endpoint id`, 'Inbound endpoint ids are UUIDs, such as 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70.');
    }
    const forwarding = forwardingSettings(this.flags);
    const exitOnDisconnectMs = durationFlag('exit-on-disconnect', this.flags['exit-on-disconnect']);
    const since = this.flags.since === undefined ? undefined : { text: this.flags.since, cursor: sinceCursor(this.flags.since, this.now().getTime()) };
    const client = this.client;
    await checkEndpoint(client, endpointId);
    const stop = new StopSignals().install();
    try {
      await runListenSession({
        client,
        apiUrl: this.settings.apiUrl,
        apiKey: this.settings.apiKey ?? '',
        userAgent: `hookrelay-cli/${this.config.version}`,
        endpoints: [{ endpointId }],
        cursorRoot: configDirectory(this.env, homedir()),
        profile: this.settings.profile,
        name: this.flags.name,
        forwarding,
        exitOnDisconnectMs,
        start: { fromStart: this.flags['from-start'], since, skipBacklog: this.flags['skip-backlog'] },
        json: this.jsonEnabled(),
        style: this.style.err,
        stop,
        keys: process.stdin,
      });
    } finally {
      stop.dispose();
    }
  }
}
