import { z } from 'zod';
import { HMAC_SCHEMES } from '../constants.js';

// Defined without zod in constants.ts, for clients that only name it; exported here too, beside its schema.
export { HMAC_SCHEMES };

/** The sender's signature format (HMAC_SCHEMES); `hex` is the default. */
export const HmacScheme = z.enum(HMAC_SCHEMES, { message: `must be one of ${HMAC_SCHEMES.join(', ')}` });
export type HmacScheme = z.infer<typeof HmacScheme>;

/**
 * How an inbound endpoint verifies its senders (docs/api.md, Inbound endpoints), as its record
 * shows it: every setting but the secrets, which are write-only. An unset optional setting is null.
 * The one declaration of these settings: the server's database rows carry them under the same
 * names, and its verifier takes them camelCased (`Camelized`) with the secrets beside them.
 */
export const VerificationSettings = z.object({
  verify_static_token: z.boolean(),
  /** Compared case-insensitively. */
  static_token_header_name: z.string().nullable(),
  /** Instead of the header: `?token=...`. */
  static_token_query_param: z.string().nullable(),
  verify_hmac: z.boolean(),
  hmac_scheme: HmacScheme,
  /** Required for hex and base64; replaces the preset's header for the others. */
  hmac_header_name: z.string().nullable(),
  timestamp_header_name: z.string().nullable(),
  timestamp_tolerance_seconds: z.number().int(),
  verify_ip_allowlist: z.boolean(),
  allowed_cidrs: z.array(z.string()),
});
export type VerificationSettings = z.infer<typeof VerificationSettings>;

/**
 * The checks of sender verification, as a refusal names the one that failed (logs, the
 * `check` label of the verification failure metric). An inbound message's `verified` lists those
 * of them that passed, the timestamp aside: it is part of the HMAC check.
 */
export const VERIFICATION_CHECKS = ['static_token', 'hmac', 'timestamp', 'ip_allowlist'] as const;
export type VerificationCheck = (typeof VERIFICATION_CHECKS)[number];
