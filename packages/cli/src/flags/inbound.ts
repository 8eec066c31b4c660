import type { InboundEndpointUpdateIn } from '@hookrelay/shared';
import { HMAC_SCHEMES, INBOUND_MODES } from '@hookrelay/shared/constants';
import { Flags, type Interfaces } from '@oclif/core';

/**
 * Flags shared by `inbound create` and `inbound update`, and the request body they make.
 *
 * A check's `verify_*` switch is implied by its secret or list: `--static-token` turns on
 * `verify_static_token`, `--hmac-secret` `verify_hmac`, `--allow-cidr` `verify_ip_allowlist`.
 * `--verify-…` / `--no-verify-…` set a switch explicitly and win over what is implied (e.g.
 * `--no-verify-hmac` on update turns the check off and keeps the stored secret).
 */
export const inboundSettingFlags = {
  description: Flags.string({ summary: 'Free text shown in lists (at most 500 characters).' }),
  mode: Flags.string({
    summary: 'forward: hookrelay delivers to --url; cli: `hookrelay listen` forwards to your machine. Default: forward with --url, else cli.',
    options: [...INBOUND_MODES],
  }),
  url: Flags.string({ summary: 'Forward-mode destination: https://, public address. A cli endpoint may keep one for a later switch.' }),
  'static-token': Flags.string({
    summary: 'Require this token on every request (in --static-token-header or --static-token-query). Turns on verify_static_token.',
  }),
  'static-token-header': Flags.string({ summary: 'Header that carries the static token, e.g. X-Webhook-Token.' }),
  'static-token-query': Flags.string({ summary: 'Query parameter that carries the static token, e.g. token.' }),
  'verify-static-token': Flags.boolean({
    summary: 'Switch the static-token check on or off explicitly (--no-verify-static-token keeps the stored token).',
    allowNo: true,
  }),
  'hmac-scheme': Flags.string({
    summary: "The sender's signature format (default hex). Presets know their header: github, stripe, slack, standard_webhooks.",
    options: [...HMAC_SCHEMES],
  }),
  'hmac-secret': Flags.string({ summary: 'The secret the sender signs with (standard_webhooks: whsec_…). Turns on verify_hmac.' }),
  'hmac-header': Flags.string({ summary: 'Header that carries the signature; required for the hex and base64 schemes.' }),
  'verify-hmac': Flags.boolean({
    summary: 'Switch the HMAC check on or off explicitly (--no-verify-hmac keeps the stored secret).',
    allowNo: true,
  }),
  'timestamp-header': Flags.string({ summary: 'Header with the send time (hex/base64 schemes): the signed content becomes {timestamp}.{body}.' }),
  'timestamp-tolerance': Flags.integer({ summary: 'Seconds a signed timestamp may be off, 1-86400 (server default 300).' }),
  'allow-cidr': Flags.string({
    summary: 'Accept requests only from this address block (203.0.113.0/24, 2001:db8::/32). Repeatable. Turns on verify_ip_allowlist.',
    multiple: true,
    multipleNonGreedy: true,
  }),
  'verify-ip': Flags.boolean({
    summary: 'Switch the IP allowlist on or off explicitly (--no-verify-ip keeps the stored blocks).',
    allowNo: true,
  }),
  'idempotency-header': Flags.string({
    summary: 'Header whose value identifies a repeated delivery (first present wins; 24 h window). Repeatable.',
    multiple: true,
    multipleNonGreedy: true,
  }),
  'response-code': Flags.integer({ summary: 'Status answered to the sender on success, 200-299 (server default 200).' }),
  'max-body-bytes': Flags.integer({
    summary: "Refuse (413) a webhook whose body is larger than this many bytes; at most the server's ingest limit (default 26214400).",
    min: 1,
  }),
  signing: Flags.boolean({
    summary: 'Sign what hookrelay forwards (Standard Webhooks); the signing secret is shown once.',
    allowNo: true,
  }),
  'resign-late': Flags.boolean({
    summary: "Re-sign a delivery that leaves minutes after the sender's signed timestamp, with --hmac-secret (default on; --no-resign-late sends the sender's signature as it came).",
    allowNo: true,
  }),
};

/**
 * The parsed values of `inboundSettingFlags` (each absent when not given), with the name and
 * update's clearing flags, which only some commands have.
 */
export type InboundSettingFlagValues = Partial<Interfaces.InferredFlags<typeof inboundSettingFlags>> & {
  name?: string | undefined;
  'clear-allow-cidrs'?: boolean | undefined;
  'clear-idempotency-headers'?: boolean | undefined;
  'clear-max-body-bytes'?: boolean | undefined;
};

/**
 * The settings part of a create or PATCH body: only what a flag gives, so that a PATCH changes
 * nothing else. Ranges and combinations are the server's to judge (one set of rules, answered as
 * INVALID_REQUEST naming the field).
 */
export function inboundSettingsBody(flags: InboundSettingFlagValues): InboundEndpointUpdateIn {
  const body: InboundEndpointUpdateIn = {};
  if (flags.name !== undefined) body.name = flags.name;
  if (flags.description !== undefined) body.description = flags.description;
  if (flags.mode !== undefined) body.mode = flags.mode as InboundEndpointUpdateIn['mode'];
  if (flags.url !== undefined) body.url = flags.url;

  if (flags['static-token'] !== undefined) {
    body.static_token = flags['static-token'];
    body.verify_static_token = true;
  }
  if (flags['static-token-header'] !== undefined) body.static_token_header_name = flags['static-token-header'];
  if (flags['static-token-query'] !== undefined) body.static_token_query_param = flags['static-token-query'];
  if (flags['verify-static-token'] !== undefined) body.verify_static_token = flags['verify-static-token'];

  if (flags['hmac-secret'] !== undefined) {
    body.hmac_secret = flags['hmac-secret'];
    body.verify_hmac = true;
  }
  if (flags['hmac-scheme'] !== undefined) body.hmac_scheme = flags['hmac-scheme'] as InboundEndpointUpdateIn['hmac_scheme'];
  if (flags['hmac-header'] !== undefined) body.hmac_header_name = flags['hmac-header'];
  if (flags['verify-hmac'] !== undefined) body.verify_hmac = flags['verify-hmac'];
  if (flags['timestamp-header'] !== undefined) body.timestamp_header_name = flags['timestamp-header'];
  if (flags['timestamp-tolerance'] !== undefined) body.timestamp_tolerance_seconds = flags['timestamp-tolerance'];

  if (flags['allow-cidr'] !== undefined) {
    body.allowed_cidrs = flags['allow-cidr'];
    body.verify_ip_allowlist = true;
  }
  if (flags['clear-allow-cidrs'] === true) body.allowed_cidrs = [];
  if (flags['verify-ip'] !== undefined) body.verify_ip_allowlist = flags['verify-ip'];

  if (flags['idempotency-header'] !== undefined) body.idempotency_header_names = flags['idempotency-header'];
  if (flags['clear-idempotency-headers'] === true) body.idempotency_header_names = [];
  if (flags['response-code'] !== undefined) body.ingest_response_code = flags['response-code'];
  if (flags['max-body-bytes'] !== undefined) body.max_body_bytes = flags['max-body-bytes'];
  if (flags['clear-max-body-bytes'] === true) body.max_body_bytes = null;
  if (flags.signing !== undefined) body.signing_enabled = flags.signing;
  if (flags['resign-late'] !== undefined) body.resign_late = flags['resign-late'];
  return body;
}

/** An inbound endpoint id argument's description, the same everywhere. */
export const INBOUND_ENDPOINT_ID_DESCRIPTION = 'Inbound endpoint id (a UUID).';
export const INBOUND_MESSAGE_ID_DESCRIPTION = 'Inbound message id (a UUID).';
