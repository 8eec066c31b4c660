import { randomBytes, randomUUID } from 'node:crypto';
import { signGithub, signShopify, signSlack, signStripe, standardWebhookHeaders } from './signing.js';

/**
 * Sample webhooks (`hookrelay trigger`, POST /v1/inbound-endpoints/{id}/samples): realistic bodies
 * of our own for the events developers test most, and the headers each provider sends with them,
 * signed exactly as that provider signs.
 */
export const SAMPLE_PROVIDERS = ['github', 'stripe', 'slack', 'shopify', 'standard_webhooks'] as const;
export type SampleProvider = (typeof SAMPLE_PROVIDERS)[number];

export const SAMPLE_EVENTS: Readonly<Record<SampleProvider, readonly string[]>> = {
  github: ['ping', 'push', 'pull_request', 'issues'],
  stripe: ['payment_intent.succeeded', 'checkout.session.completed', 'invoice.paid'],
  slack: ['url_verification', 'event_callback'],
  shopify: ['orders/create'],
  standard_webhooks: ['user.created'],
};

/**
 * How an inbound endpoint must verify to accept a provider's samples: its `hmac_scheme`, and the
 * signature header (the preset's, or `hmac_header_name` for the generic schemes).
 */
export const SAMPLE_SIGNATURE: Readonly<Record<SampleProvider, { scheme: string; header: string }>> = {
  github: { scheme: 'github', header: 'x-hub-signature-256' },
  stripe: { scheme: 'stripe', header: 'stripe-signature' },
  slack: { scheme: 'slack', header: 'x-slack-signature' },
  shopify: { scheme: 'base64', header: 'x-shopify-hmac-sha256' },
  standard_webhooks: { scheme: 'standard_webhooks', header: 'webhook-signature' },
};

export function isSampleEvent(provider: SampleProvider, event: string): boolean {
  return SAMPLE_EVENTS[provider].includes(event);
}

/** What varies between two samples of one event: the time and the ids. */
export interface SampleContext {
  now: Date;
  /** A fresh random id: `hex` digits of hex. */
  hex(digits: number): string;
  /** A fresh UUID. */
  uuid(): string;
  /** A fresh positive integer id, as GitHub and Shopify number things. */
  int(): number;
}

export function randomSampleContext(now: Date = new Date()): SampleContext {
  return {
    now,
    hex: (digits) => randomBytes(Math.ceil(digits / 2)).toString('hex').slice(0, digits),
    uuid: () => randomUUID(),
    int: () => 1_000_000_000 + randomBytes(4).readUInt32BE(0),
  };
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** Stripe-like ids: `pi_3Q…` (24 letters and digits after the prefix). */
function stripeId(ctx: SampleContext, prefix: string): string {
  const hex = ctx.hex(48);
  let text = '';
  for (let i = 0; i < 24; i++) text += ALNUM[parseInt(hex.slice(i * 2, i * 2 + 2), 16) % ALNUM.length];
  return `${prefix}_${text}`;
}

const iso = (date: Date): string => date.toISOString().replace(/\.\d{3}Z$/u, 'Z');
const unix = (date: Date): number => Math.floor(date.getTime() / 1000);

// ---- GitHub -------------------------------------------------------------------------------------

function githubRepository(ctx: SampleContext): JsonObject {
  const id = ctx.int();
  return {
    id,
    node_id: `R_kgDO${ctx.hex(8)}`,
    name: 'webhook-demo',
    full_name: 'octo-org/webhook-demo',
    private: false,
    owner: { login: 'octo-org', id: 9919, type: 'Organization', html_url: 'https://github.com/octo-org' },
    html_url: 'https://github.com/octo-org/webhook-demo',
    description: 'Where hookrelay sample events come from',
    fork: false,
    url: 'https://api.github.com/repos/octo-org/webhook-demo',
    created_at: '2025-03-14T09:26:53Z',
    updated_at: iso(ctx.now),
    pushed_at: iso(ctx.now),
    default_branch: 'main',
    visibility: 'public',
  };
}

const GITHUB_SENDER: JsonObject = {
  login: 'octocat',
  id: 583231,
  node_id: 'MDQ6VXNlcjU4MzIzMQ==',
  avatar_url: 'https://avatars.githubusercontent.com/u/583231?v=4',
  html_url: 'https://github.com/octocat',
  type: 'User',
  site_admin: false,
};

function githubBody(event: string, ctx: SampleContext): JsonObject {
  const repository = githubRepository(ctx);
  switch (event) {
    case 'ping':
      return {
        zen: 'Design for failure.',
        hook_id: ctx.int(),
        hook: {
          type: 'Repository',
          id: ctx.int(),
          name: 'web',
          active: true,
          events: ['push', 'pull_request', 'issues'],
          config: { content_type: 'json', insecure_ssl: '0', url: 'https://hooks.example.com/github' },
          created_at: iso(ctx.now),
          updated_at: iso(ctx.now),
        },
        repository,
        sender: GITHUB_SENDER,
      };
    case 'push': {
      const before = ctx.hex(40);
      const after = ctx.hex(40);
      const commit = {
        id: after,
        tree_id: ctx.hex(40),
        distinct: true,
        message: 'Verify webhook signatures before parsing the body',
        timestamp: iso(ctx.now),
        url: `https://github.com/octo-org/webhook-demo/commit/${after}`,
        author: { name: 'Mona Lisa Octocat', email: 'mona@github.com', username: 'octocat' },
        committer: { name: 'Mona Lisa Octocat', email: 'mona@github.com', username: 'octocat' },
        added: ['src/verify.ts'],
        removed: [],
        modified: ['src/server.ts', 'README.md'],
      };
      return {
        ref: 'refs/heads/main',
        before,
        after,
        repository,
        pusher: { name: 'octocat', email: 'mona@github.com' },
        sender: GITHUB_SENDER,
        created: false,
        deleted: false,
        forced: false,
        base_ref: null,
        compare: `https://github.com/octo-org/webhook-demo/compare/${before.slice(0, 12)}...${after.slice(0, 12)}`,
        commits: [commit],
        head_commit: commit,
      };
    }
    case 'pull_request': {
      const number = 42;
      return {
        action: 'opened',
        number,
        pull_request: {
          url: `https://api.github.com/repos/octo-org/webhook-demo/pulls/${number}`,
          id: ctx.int(),
          html_url: `https://github.com/octo-org/webhook-demo/pull/${number}`,
          number,
          state: 'open',
          locked: false,
          title: 'Retry deliveries with exponential backoff',
          user: GITHUB_SENDER,
          body: 'Failed deliveries are retried 250 ms, 500 ms, 1 s … up to 5 s.',
          created_at: iso(ctx.now),
          updated_at: iso(ctx.now),
          closed_at: null,
          merged_at: null,
          draft: false,
          head: { label: 'octocat:retry-backoff', ref: 'retry-backoff', sha: ctx.hex(40) },
          base: { label: 'octo-org:main', ref: 'main', sha: ctx.hex(40) },
          merged: false,
          mergeable: null,
          comments: 0,
          commits: 3,
          additions: 120,
          deletions: 14,
          changed_files: 4,
        },
        repository,
        sender: GITHUB_SENDER,
      };
    }
    default: {
      const number = 7;
      return {
        action: 'opened',
        issue: {
          url: `https://api.github.com/repos/octo-org/webhook-demo/issues/${number}`,
          id: ctx.int(),
          number,
          title: 'Webhook signature fails after key rotation',
          user: GITHUB_SENDER,
          labels: [{ id: 208045946, name: 'bug', color: 'd73a4a', default: true }],
          state: 'open',
          locked: false,
          assignee: null,
          comments: 0,
          created_at: iso(ctx.now),
          updated_at: iso(ctx.now),
          closed_at: null,
          body: 'After rotating the secret, deliveries are rejected with 401.',
        },
        repository,
        sender: GITHUB_SENDER,
      };
    }
  }
}

// ---- Stripe -------------------------------------------------------------------------------------

function stripeObject(event: string, ctx: SampleContext): JsonObject {
  const created = unix(ctx.now);
  const customer = stripeId(ctx, 'cus');
  switch (event) {
    case 'payment_intent.succeeded': {
      const id = stripeId(ctx, 'pi');
      return {
        id,
        object: 'payment_intent',
        amount: 2000,
        amount_capturable: 0,
        amount_received: 2000,
        capture_method: 'automatic',
        client_secret: `${id}_secret_${stripeId(ctx, 'x').slice(2)}`,
        confirmation_method: 'automatic',
        created,
        currency: 'usd',
        customer,
        description: 'Pro plan, monthly',
        latest_charge: stripeId(ctx, 'ch'),
        livemode: false,
        metadata: { order_id: '6735' },
        payment_method: stripeId(ctx, 'pm'),
        payment_method_types: ['card'],
        receipt_email: 'jenny.rosen@example.com',
        status: 'succeeded',
      };
    }
    case 'checkout.session.completed':
      return {
        id: stripeId(ctx, 'cs_test'),
        object: 'checkout.session',
        amount_subtotal: 2000,
        amount_total: 2000,
        client_reference_id: 'user_1234',
        created,
        currency: 'usd',
        customer,
        customer_details: { email: 'jenny.rosen@example.com', name: 'Jenny Rosen', address: { country: 'US', postal_code: '94103' } },
        expires_at: created + 86_400,
        livemode: false,
        metadata: {},
        mode: 'payment',
        payment_intent: stripeId(ctx, 'pi'),
        payment_status: 'paid',
        status: 'complete',
        success_url: 'https://example.com/success',
        url: null,
      };
    default:
      return {
        id: stripeId(ctx, 'in'),
        object: 'invoice',
        account_country: 'US',
        amount_due: 1500,
        amount_paid: 1500,
        amount_remaining: 0,
        billing_reason: 'subscription_cycle',
        collection_method: 'charge_automatically',
        created,
        currency: 'usd',
        customer,
        customer_email: 'jenny.rosen@example.com',
        hosted_invoice_url: 'https://invoice.stripe.com/i/acct_1Example/test_YWNjdF8x',
        lines: {
          object: 'list',
          data: [{ id: stripeId(ctx, 'il'), object: 'line_item', amount: 1500, currency: 'usd', description: '1 × Pro (at $15.00 / month)', quantity: 1 }],
          has_more: false,
          total_count: 1,
        },
        livemode: false,
        number: 'A1B2C3D4-0007',
        paid: true,
        period_end: created,
        period_start: created - 2_592_000,
        status: 'paid',
        subscription: stripeId(ctx, 'sub'),
        total: 1500,
      };
  }
}

function stripeBody(event: string, ctx: SampleContext): JsonObject {
  return {
    id: stripeId(ctx, 'evt'),
    object: 'event',
    api_version: '2024-06-20',
    created: unix(ctx.now),
    data: { object: stripeObject(event, ctx) },
    livemode: false,
    pending_webhooks: 1,
    request: { id: stripeId(ctx, 'req'), idempotency_key: ctx.uuid() },
    type: event,
  };
}

// ---- Slack --------------------------------------------------------------------------------------

function slackBody(event: string, ctx: SampleContext): JsonObject {
  if (event === 'url_verification') {
    return { token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl', challenge: ctx.hex(48), type: 'url_verification' };
  }
  const ts = `${unix(ctx.now)}.${ctx.hex(6).replace(/[a-f]/gu, '0')}`;
  return {
    token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl',
    team_id: 'T061EG9R6',
    api_app_id: 'A0PNCHHK2',
    event: {
      type: 'app_mention',
      user: 'U061F7AUR',
      text: '<@U0LAN0Z89> is the webhook relay up?',
      ts,
      channel: 'C0LAN2Q65',
      event_ts: ts,
    },
    type: 'event_callback',
    event_id: `Ev${ctx.hex(8).toUpperCase()}`,
    event_time: unix(ctx.now),
    authorizations: [{ enterprise_id: null, team_id: 'T061EG9R6', user_id: 'U0LAN0Z89', is_bot: true, is_enterprise_install: false }],
    is_ext_shared_channel: false,
  };
}

// ---- Shopify ------------------------------------------------------------------------------------

function shopifyBody(_event: string, ctx: SampleContext): JsonObject {
  const id = ctx.int();
  const created = ctx.now.toISOString().replace(/\.\d{3}Z$/u, '-00:00');
  return {
    id,
    admin_graphql_api_id: `gid://shopify/Order/${id}`,
    name: '#1001',
    order_number: 1001,
    email: 'jon@example.com',
    created_at: created,
    updated_at: created,
    currency: 'USD',
    financial_status: 'paid',
    fulfillment_status: null,
    subtotal_price: '199.00',
    total_tax: '0.00',
    total_price: '209.00',
    total_discounts: '0.00',
    confirmed: true,
    test: true,
    customer: { id: ctx.int(), email: 'jon@example.com', first_name: 'Jon', last_name: 'Snow', currency: 'USD' },
    line_items: [
      { id: ctx.int(), product_id: ctx.int(), variant_id: ctx.int(), title: 'Leather boots', quantity: 1, price: '199.00', sku: 'BOOT-42', requires_shipping: true },
    ],
    shipping_lines: [{ id: ctx.int(), title: 'Standard', price: '10.00', code: 'Standard' }],
    shipping_address: { first_name: 'Jon', last_name: 'Snow', address1: '123 Shipping Street', city: 'Shippington', province: 'Kentucky', country: 'United States', zip: '40003' },
  };
}

// ---- Standard Webhooks --------------------------------------------------------------------------

function standardBody(event: string, ctx: SampleContext): JsonObject {
  return {
    type: event,
    timestamp: ctx.now.toISOString(),
    data: { id: ctx.uuid(), type: 'user', email: 'ada@example.com', name: 'Ada Lovelace', created_at: ctx.now.toISOString() },
  };
}

/** The body of a sample event as a JSON value (edit it with `applySampleEdits`, then `sampleRequest`). */
export function sampleBody(provider: SampleProvider, event: string, ctx: SampleContext): JsonObject {
  if (!isSampleEvent(provider, event)) throw new Error(`no sample for ${provider} ${event}; there are: ${SAMPLE_EVENTS[provider].join(', ')}`);
  switch (provider) {
    case 'github':
      return githubBody(event, ctx);
    case 'stripe':
      return stripeBody(event, ctx);
    case 'slack':
      return slackBody(event, ctx);
    case 'shopify':
      return shopifyBody(event, ctx);
    case 'standard_webhooks':
      return standardBody(event, ctx);
  }
}

/** One `--set a.b=value` edit: a dotted path (array items by index) and the value to put there. */
export interface SampleEdit {
  path: string;
  value: string | number | boolean | null;
}

/**
 * Path segments that name an object's prototype machinery rather than a field: written through, they
 * would change every object of the process (`__proto__.x`, `constructor.prototype.x`), so no edit may
 * name one.
 */
export const FORBIDDEN_PATH_SEGMENTS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Why `path` cannot be an edit's path, or null when it can: dotted keys, none empty, none in
 * FORBIDDEN_PATH_SEGMENTS. The samples route's schema and `hookrelay trigger --set` use it too.
 */
export function sampleEditPathProblem(path: string): string | null {
  const keys = path.split('.');
  if (keys.some((key) => key === '')) return `"${path}" is not a path: use dotted keys such as data.object.amount`;
  const forbidden = keys.find((key) => FORBIDDEN_PATH_SEGMENTS.has(key));
  if (forbidden !== undefined) return `"${path}" names "${forbidden}", which is refused: a path may not use __proto__, constructor or prototype`;
  return null;
}

/**
 * Applies edits in order. Missing objects on the way are created; a step into something that is not
 * an object or array (or an index out of range) is an error naming the path. Only own properties are
 * read and written, so `toString` or `hasOwnProperty` is a field like any other.
 */
export function applySampleEdits(body: JsonObject, edits: readonly SampleEdit[]): JsonObject {
  for (const edit of edits) {
    const problem = sampleEditPathProblem(edit.path);
    if (problem !== null) throw new Error(problem);
    const keys = edit.path.split('.');
    let node: Json[] | JsonObject = body;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      const last = i === keys.length - 1;
      let slot: string | number = key;
      if (Array.isArray(node)) {
        const index = /^\d+$/u.test(key) ? Number(key) : NaN;
        if (!(index < node.length + (last ? 1 : 0))) throw new Error(`"${edit.path}": ${keys.slice(0, i).join('.')} has no item ${key}`);
        slot = index;
      }
      const container = node as Record<string | number, Json>;
      if (last) {
        Object.defineProperty(container, slot, { value: edit.value, writable: true, enumerable: true, configurable: true });
        break;
      }
      const next: Json | undefined = Object.hasOwn(container, slot) ? container[slot] : undefined;
      if (next === undefined || next === null) {
        const created: JsonObject = {};
        Object.defineProperty(container, slot, { value: created, writable: true, enumerable: true, configurable: true });
        node = created;
      } else if (typeof next === 'object') {
        node = next;
      } else {
        throw new Error(`"${edit.path}": ${keys.slice(0, i + 1).join('.')} is a ${typeof next}, not an object`);
      }
    }
  }
  return body;
}

/** `a.b=value`: the value is JSON when it reads as a JSON scalar (42, true, null, "quoted"), else the text. */
export function parseSampleEdit(text: string): SampleEdit {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new Error(`"${text}" is not PATH=VALUE (such as data.object.amount=5000)`);
  const path = text.slice(0, eq);
  const problem = sampleEditPathProblem(path);
  if (problem !== null) throw new Error(problem);
  const raw = text.slice(eq + 1);
  let value: SampleEdit['value'] = raw;
  try {
    const parsed: unknown = JSON.parse(raw);
    if (parsed === null || ['string', 'number', 'boolean'].includes(typeof parsed)) value = parsed as SampleEdit['value'];
  } catch {
    // Plain text.
  }
  return { path, value };
}

/** A sample ready to send: the exact body bytes and the header lines, in the provider's order. */
export interface SampleRequest {
  body: Buffer;
  headers: [string, string][];
}

/** The provider's own headers besides the signature (event name, delivery id, …). */
function providerHeaders(provider: SampleProvider, event: string, ctx: SampleContext): [string, string][] {
  switch (provider) {
    case 'github':
      return [
        ['User-Agent', 'GitHub-Hookshot/hookrelay-sample'],
        ['Content-Type', 'application/json'],
        ['X-GitHub-Delivery', ctx.uuid()],
        ['X-GitHub-Event', event],
        ['X-GitHub-Hook-ID', String(ctx.int())],
      ];
    case 'stripe':
      return [
        ['User-Agent', 'Stripe/1.0 (+https://stripe.com/docs/webhooks)'],
        ['Content-Type', 'application/json; charset=utf-8'],
      ];
    case 'slack':
      return [
        ['User-Agent', 'Slackbot 1.0 (+https://api.slack.com/robots)'],
        ['Content-Type', 'application/json'],
        ['X-Slack-Request-Timestamp', String(unix(ctx.now))],
      ];
    case 'shopify':
      return [
        ['User-Agent', 'Shopify-Captain-Hook'],
        ['Content-Type', 'application/json'],
        ['X-Shopify-Topic', event],
        ['X-Shopify-Shop-Domain', 'hookrelay-demo.myshopify.com'],
        ['X-Shopify-API-Version', '2024-07'],
        ['X-Shopify-Webhook-Id', ctx.uuid()],
        ['X-Shopify-Triggered-At', ctx.now.toISOString()],
      ];
    case 'standard_webhooks':
      return [['Content-Type', 'application/json']];
  }
}

/** The signature header lines of `body` under `secret`, as the provider computes them. */
export function sampleSignatureHeaders(provider: SampleProvider, secret: string, body: Buffer, ctx: SampleContext): [string, string][] {
  const timestamp = unix(ctx.now);
  switch (provider) {
    case 'github':
      return [['X-Hub-Signature-256', signGithub(secret, body)]];
    case 'stripe':
      return [['Stripe-Signature', signStripe(secret, body, timestamp)]];
    case 'slack':
      return [['X-Slack-Signature', signSlack(secret, body, timestamp)]];
    case 'shopify':
      return [['X-Shopify-Hmac-Sha256', signShopify(secret, body)]];
    case 'standard_webhooks': {
      const headers = standardWebhookHeaders([secret], { id: `msg_${ctx.hex(24)}`, timestamp, body });
      return [
        ['webhook-id', headers['webhook-id']!],
        ['webhook-timestamp', headers['webhook-timestamp']!],
        ['webhook-signature', headers['webhook-signature']!],
      ];
    }
  }
}

/**
 * The request a provider would send for `body`: its headers, and the signature under `secret` when
 * one is given (without one, the sample goes unsigned).
 */
export function sampleRequest(provider: SampleProvider, event: string, body: JsonObject, secret: string | null, ctx: SampleContext): SampleRequest {
  const bytes = Buffer.from(JSON.stringify(body), 'utf8');
  const headers = providerHeaders(provider, event, ctx);
  if (secret !== null) headers.push(...sampleSignatureHeaders(provider, secret, bytes, ctx));
  return { body: bytes, headers };
}
