import type { SampleProvider } from './samples.js';

/**
 * The header each provider names itself by (lowercase), in the order they are judged: a request
 * is the first provider's of which it carries one of these.
 */
const PROVIDER_HEADERS: readonly (readonly [SampleProvider, readonly string[]])[] = [
  ['github', ['x-github-event', 'x-hub-signature-256']],
  ['stripe', ['stripe-signature']],
  ['slack', ['x-slack-signature', 'x-slack-request-timestamp']],
  ['shopify', ['x-shopify-topic', 'x-shopify-hmac-sha256']],
  ['standard_webhooks', ['webhook-signature']],
];

/**
 * Which provider sent a webhook, as its header lines show it (GitHub `X-GitHub-Event`, Stripe
 * `Stripe-Signature`, Slack `X-Slack-Signature`, Shopify `X-Shopify-Topic`, Standard Webhooks
 * `webhook-signature`); null when none of them is there.
 */
export function detectProvider(rawHeaders: readonly (readonly [string, string])[]): SampleProvider | null {
  const names = new Set(rawHeaders.map(([name]) => name.toLowerCase()));
  for (const [provider, headers] of PROVIDER_HEADERS) if (headers.some((header) => names.has(header))) return provider;
  return null;
}

/** How people write each provider's name: the inspector's titles and columns. */
export const PROVIDER_NAMES: Readonly<Record<SampleProvider, string>> = {
  github: 'GitHub',
  stripe: 'Stripe',
  slack: 'Slack',
  shopify: 'Shopify',
  standard_webhooks: 'Standard Webhooks',
};

/**
 * The providers above, in their order (the samples' list, SAMPLE_PROVIDERS): the light list of
 * them for the CLI's routes and `dev --verify`, without the samples module.
 */
export const PROVIDERS: readonly SampleProvider[] = PROVIDER_HEADERS.map(([provider]) => provider);

export function isProvider(name: string): name is SampleProvider {
  return (PROVIDERS as readonly string[]).includes(name);
}
