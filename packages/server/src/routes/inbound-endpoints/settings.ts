import type { Camelized, ErrorDetail, HmacScheme, InboundMode, VerificationSettings } from '@hookrelay/shared';
import { AppError } from '../../errors.js';
import { validateCidr } from '../../ingest/verify.js';

/** Schemes whose preset names the signature header; `hex` and `base64` need `hmac_header_name`. */
const SCHEMES_NEEDING_HEADER: ReadonlySet<HmacScheme> = new Set(['hex', 'base64']);

export function invalid(details: ErrorDetail[]): AppError {
  return new AppError('INVALID_REQUEST', details.map((d) => `${d.path}: ${d.message}`).join('; '), { details });
}

/** The verification module's parser is the one ingestion uses, so nothing is stored that it would drop. */
export function assertCidrsValid(cidrs: readonly string[] | undefined): void {
  const details: ErrorDetail[] = [];
  (cidrs ?? []).forEach((cidr, i) => {
    const problem = validateCidr(cidr);
    if (problem !== null) details.push({ path: `body.allowed_cidrs.${i}`, message: problem });
  });
  if (details.length > 0) throw invalid(details);
}

/**
 * Standard Webhooks keys are `whsec_` + base64 and are used decoded; anything else could never
 * verify a request, so it is refused when written instead of failing every delivery later.
 */
export function standardWebhooksSecretProblem(secret: string): string | null {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || Buffer.from(encoded, 'base64').length === 0) {
    return 'must be whsec_ followed by base64 when hmac_scheme is standard_webhooks';
  }
  return null;
}

/**
 * The settings an endpoint would have after a create or PATCH: what the checks below judge. The
 * verification settings are the shared declaration's (the timestamp's are complete by default);
 * of the secrets, only whether one is there.
 */
export interface EffectiveSettings extends Omit<Camelized<VerificationSettings>, 'timestampHeaderName' | 'timestampToleranceSeconds'> {
  mode: InboundMode;
  url: string;
  hasStaticToken: boolean;
  hasHmacSecret: boolean;
}

/**
 * Every switched-on check must be complete, whether its parts come from this request or were stored
 * before: a check that cannot work would refuse every webhook (ingestion fails closed).
 */
export function settingsProblems(s: EffectiveSettings): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  if (s.mode === 'forward' && s.url === '') details.push({ path: 'body.url', message: 'is required when mode is forward' });
  if (s.verifyStaticToken) {
    if (!s.hasStaticToken) details.push({ path: 'body.static_token', message: 'is required when verify_static_token is true' });
    if (s.staticTokenHeaderName === null && s.staticTokenQueryParam === null) {
      details.push({ path: 'body.static_token_header_name', message: 'or static_token_query_param is required when verify_static_token is true' });
    }
  }
  if (s.verifyHmac) {
    if (!s.hasHmacSecret) details.push({ path: 'body.hmac_secret', message: 'is required when verify_hmac is true' });
    if (SCHEMES_NEEDING_HEADER.has(s.hmacScheme) && s.hmacHeaderName === null) {
      details.push({ path: 'body.hmac_header_name', message: 'is required when verify_hmac is true and hmac_scheme is hex or base64' });
    }
  }
  if (s.verifyIpAllowlist && s.allowedCidrs.length === 0) {
    details.push({ path: 'body.allowed_cidrs', message: 'must list at least one CIDR block when verify_ip_allowlist is true' });
  }
  return details;
}
