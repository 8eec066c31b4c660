import { isUuid } from '@hookrelay/shared/ids';
import {
  applySampleEdits,
  isSampleEvent,
  randomSampleContext,
  SAMPLE_EVENTS,
  SAMPLE_PROVIDERS,
  SAMPLE_SIGNATURE,
  sampleBody,
  sampleRequest,
  type SampleEdit,
  type SampleProvider,
} from '@hookrelay/shared/samples';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { requireRunningDevEndpoint } from '../dev/running.js';
import { CliErrorCode, CliFailure, usageFailure } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import { editsFromFlags } from '../flags/edits.js';
import { formatSampleList, formatSampleSent, type SampleListRow, type TriggerResult } from '../format/trigger.js';

/** Sub-path characters an ingest URL carries as they are. */
const SUB_PATH = /^\/[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*$/u;

export default class Trigger extends BaseCommand<typeof Trigger> {
  static override summary = "Send a realistic, correctly signed sample webhook (GitHub, Stripe, Slack, Shopify, Standard Webhooks) to an inbound endpoint's ingest URL.";
  static override description = `The sample is a body of the provider's shape with fresh ids and the current time, sent with the provider's headers (X-GitHub-Event, X-Shopify-Topic, …) and signed exactly as the provider signs, so the endpoint's verification runs for real and your app can check the signature with the provider's own library. A listener (\`hookrelay listen\`, \`hookrelay dev\`) then forwards it like any webhook.

Without --secret the server signs the sample with the HMAC secret stored on the endpoint (POST /v1/inbound-endpoints/{id}/samples): the secret never leaves the server. The endpoint must verify with the provider's scheme (hmac_scheme github, stripe, slack, standard_webhooks; for Shopify base64 with hmac_header_name X-Shopify-Hmac-Sha256). An endpoint that verifies nothing (such as the one \`hookrelay dev\` makes) gets the sample unsigned unless it holds a secret of the provider's scheme; the output says so ("signed_by": "none" with --json). With --secret the CLI signs and posts to the ingest URL itself.

While \`hookrelay dev\` runs (and its server is the one in use), ENDPOINT-ID may be left out: \`hookrelay trigger github push\` goes to dev's github endpoint (\`dev --verify github=…\`), signed by the server with its secret, or to dev's one endpoint when it verifies nothing.

--set edits the body before it is signed: a dotted path (array items by index) and a value read as JSON when it is a JSON scalar (5000, true, null, "text"), else as text.

\`hookrelay trigger --list\` shows every provider and event.`;

  static override examples = [
    { description: 'What can be sent:', command: '<%= config.bin %> <%= command.id %> --list' },
    {
      description: 'A GitHub push, signed by the server with the endpoint\'s secret:',
      command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 github push',
    },
    {
      description: "While hookrelay dev runs: a GitHub push to dev's github endpoint (dev --verify github=…):",
      command: '<%= config.bin %> <%= command.id %> github push',
    },
    {
      description: 'A Stripe payment of 50.00 EUR, signed with a secret you give, posted to <ingest URL>/stripe:',
      command:
        '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 stripe payment_intent.succeeded --set data.object.amount=5000 --set data.object.currency=eur --secret "$STRIPE_WEBHOOK_SECRET" --path /stripe',
    },
    {
      description: 'The new message id, for a script:',
      command: "<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 shopify orders/create --json | jq -r .message_id",
    },
  ];

  static override args = {
    'endpoint-id': Args.string({ description: "Id of the inbound endpoint (a UUID); left out while hookrelay dev runs: dev's endpoint of PROVIDER." }),
    provider: Args.string({ description: `The sender: ${SAMPLE_PROVIDERS.join(', ')}.` }),
    event: Args.string({ description: 'The event, e.g. push or checkout.session.completed (see --list).' }),
  };

  static override flags = {
    list: Flags.boolean({ summary: 'List the providers and events there are samples of, and the verification each needs.' }),
    set: Flags.string({ summary: 'Edit the body before signing: PATH=VALUE (data.object.amount=5000); repeatable.', multiple: true }),
    secret: Flags.string({ summary: 'Sign with this secret and post to the ingest URL from here, instead of letting the server sign with the stored one.' }),
    path: Flags.string({ summary: 'Sub-path to post to after the ingest URL, e.g. /github (for a listener route).', default: '/' }),
  };

  public async run(): Promise<TriggerResult | SampleListRow[]> {
    if (this.flags.list) {
      const rows = SAMPLE_PROVIDERS.flatMap((provider) =>
        SAMPLE_EVENTS[provider].map((event) => ({ provider, event, hmac_scheme: SAMPLE_SIGNATURE[provider].scheme, signature_header: SAMPLE_SIGNATURE[provider].header })),
      );
      this.print(formatSampleList(rows, this.style.out));
      return rows;
    }
    const { endpointId, provider, event, edits, path } = this.input();
    const result = this.flags.secret === undefined ? await this.serverSigned(endpointId, provider, event, edits, path) : await this.cliSigned(endpointId, provider, event, edits, path, this.flags.secret);
    this.print(formatSampleSent(result, this.style.out));
    return result;
  }

  private input(): { endpointId: string; provider: SampleProvider; event: string; edits: SampleEdit[]; path: string } {
    const { 'endpoint-id': first, provider: second, event: third } = this.args;
    // Two arguments, the first no id: PROVIDER EVENT, to the running dev's endpoint.
    const toDev = third === undefined && first !== undefined && second !== undefined && !isUuid(first.toLowerCase());
    const [id, provider, event] = toDev ? [undefined, first, second] : [first, second, third];
    if ((id === undefined && !toDev) || provider === undefined || event === undefined) {
      throw usageFailure('trigger needs ENDPOINT-ID PROVIDER EVENT', 'For example: hookrelay trigger 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 github push; --list shows the events.');
    }
    if (!(SAMPLE_PROVIDERS as readonly string[]).includes(provider)) throw usageFailure(`unknown provider "${provider}"`, `Use one of ${SAMPLE_PROVIDERS.join(', ')}.`);
    const known = provider as SampleProvider;
    const endpointId = id === undefined ? this.devEndpoint(known) : id.toLowerCase();
    if (!isUuid(endpointId)) throw usageFailure(`"${id}" is not an inbound endpoint id`, 'Inbound endpoint ids are UUIDs, such as 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70.');
    if (!isSampleEvent(known, event)) throw usageFailure(`no sample of ${provider} "${event}"`, `${provider} has: ${SAMPLE_EVENTS[known].join(', ')}.`);
    const edits = editsFromFlags(this.flags.set);
    const path = this.flags.path;
    if (!SUB_PATH.test(path)) throw usageFailure(`--path: "${path}" must start with / and hold only URL path characters`);
    return { endpointId, provider: known, event, edits, path };
  }

  /** `trigger PROVIDER EVENT`: the running dev's endpoint of that provider. */
  private devEndpoint(provider: SampleProvider): string {
    return requireRunningDevEndpoint(this.runningDev, provider, {
      message: 'trigger needs ENDPOINT-ID PROVIDER EVENT (only while hookrelay dev runs may ENDPOINT-ID be left out)',
      hint: `For example: hookrelay trigger 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 ${provider} ${SAMPLE_EVENTS[provider][0]}, or start hookrelay dev in another terminal.`,
    });
  }

  private async serverSigned(endpointId: string, provider: SampleProvider, event: string, edits: SampleEdit[], path: string): Promise<TriggerResult> {
    const { data } = await this.client.inboundEndpoints.sample(endpointId, { provider, event, path, ...(edits.length > 0 ? { set: edits } : {}) });
    // A server that predates `signed` always signed.
    return { ...data, signed: data.signed !== false, signed_by: data.signed === false ? 'none' : 'server' };
  }

  private async cliSigned(endpointId: string, provider: SampleProvider, event: string, edits: SampleEdit[], path: string, secret: string): Promise<TriggerResult> {
    const { data: endpoint } = await this.client.inboundEndpoints.get(endpointId);
    const ctx = randomSampleContext(this.now());
    let body;
    try {
      body = applySampleEdits(sampleBody(provider, event, ctx), edits);
    } catch (error) {
      throw usageFailure(`--set: ${(error as Error).message}`);
    }
    const sample = sampleRequest(provider, event, body, secret, ctx);
    const url = `${endpoint.ingest_url.replace(/\/+$/u, '')}${path === '/' ? '' : path}`;
    // Only this way of sending posts to the ingest URL itself and reads the answer with a schema:
    // undici and zod load here, not at every start of the command.
    const [{ request }, { sampleOutcome }] = await Promise.all([import('undici'), import('@hookrelay/shared/sample-outcome')]);
    let answer;
    try {
      answer = await request(url, { method: 'POST', headers: sample.headers.flat(), body: sample.body, headersTimeout: 30_000, bodyTimeout: 30_000 });
    } catch (error) {
      throw new CliFailure(CliErrorCode.NETWORK_ERROR, `cannot reach the ingest URL (${(error as Error).message})`, ExitCode.NETWORK);
    }
    const text = await answer.body.text();
    if (answer.statusCode >= 300) {
      const hint =
        answer.statusCode === 401
          ? `The endpoint's verification refused the sample: is --secret its hmac_secret, and does it verify with hmac_scheme ${SAMPLE_SIGNATURE[provider].scheme} (${SAMPLE_SIGNATURE[provider].header})?`
          : undefined;
      throw new CliFailure(CliErrorCode.INGEST_REFUSED, `the ingest URL answered ${answer.statusCode}${text === '' ? '' : `: ${text.slice(0, 300)}`}`, ExitCode.GENERIC, hint);
    }
    const out = sampleOutcome(
      endpoint.id,
      provider,
      event,
      path,
      sample,
      { status: answer.statusCode, duplicate: answer.headers['hookrelay-duplicate'] === 'true', text },
      true,
    );
    return { ...out, signed_by: 'cli' };
  }
}
