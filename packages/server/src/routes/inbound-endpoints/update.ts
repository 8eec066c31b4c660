import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { IdParams, InboundEndpointUpdateIn, InboundEndpointUpdateOut, successEnvelope } from '@hookrelay/shared';
import { findInboundEndpoint, lockInboundEndpoint, releaseExpiredInboundUrl, updateInboundEndpoint, type InboundEndpointPatch } from '../../db/inbound-endpoints.js';
import { listActiveSigningKeys } from '../../db/signing-keys.js';
import { endpointNotFound } from '../../errors.js';
import { assertDestinationAllowed } from '../../http/destination.js';
import { eventTypePatch } from '../../http/event-type-patch.js';
import { assertEndpointBodyLimit } from '../../ingest/body-limit.js';
import { createSigningKey } from '../../lib/signing-keys.js';
import { principalOf } from '../../plugins/auth.js';
import { sha256Hex } from '../../security/crypto.js';
import { refuseNul } from '../../security/text.js';
import { assertCidrsValid, invalid, settingsProblems, standardWebhooksSecretProblem, type EffectiveSettings } from './settings.js';
import { announceChanged, mapDuplicateUrl } from './url.js';

const UpdateBody = refuseNul(InboundEndpointUpdateIn);

/** `""` in a PATCH clears an optional text setting (InboundEndpointUpdateIn). */
function clearable(value: string | undefined): string | null | undefined {
  return value === undefined ? undefined : value === '' ? null : value;
}

/**
 * PATCH /v1/inbound-endpoints/{id}: the settings the endpoint has afterwards, stored and sent
 * alike, are judged as a whole under the endpoint's row lock.
 */
export function inboundEndpointUpdateRoute(fastify: FastifyInstance): void {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;

  app.patch(
    '/inbound-endpoints/:id',
    { schema: { params: IdParams, body: UpdateBody, response: { 200: successEnvelope(InboundEndpointUpdateOut) } } },
    async (request) => {
      const principal = principalOf(request);
      const body = request.body ?? {};
      const { id } = request.params;
      // Existence first, so an unknown id is 404 whatever the body says.
      if (!(await findInboundEndpoint(sql, principal.project_id, id))) throw endpointNotFound(id);
      assertCidrsValid(body.allowed_cidrs);
      assertEndpointBodyLimit(services.config, body.max_body_bytes);
      // Outside the transaction: the lookup may take seconds and must not hold the row lock.
      if (body.url !== undefined && body.url !== '') await assertDestinationAllowed(services, body.url);

      const { endpointId, released } = await mapDuplicateUrl(() =>
        sql.begin(async (tx) => {
          const row = await lockInboundEndpoint(tx, principal.project_id, id);
          if (!row) throw endpointNotFound(id);
          const patch: InboundEndpointPatch = {
            name: body.name,
            description: body.description,
            mode: body.mode,
            url: body.url,
            verifyStaticToken: body.verify_static_token,
            staticTokenHeaderName: clearable(body.static_token_header_name),
            staticTokenQueryParam: clearable(body.static_token_query_param),
            staticTokenHash: body.static_token !== undefined ? sha256Hex(body.static_token) : undefined,
            verifyHmac: body.verify_hmac,
            hmacScheme: body.hmac_scheme,
            hmacHeaderName: clearable(body.hmac_header_name),
            hmacSecretEncrypted: body.hmac_secret !== undefined ? services.secretBox.encrypt(body.hmac_secret) : undefined,
            timestampHeaderName: clearable(body.timestamp_header_name),
            timestampToleranceSeconds: body.timestamp_tolerance_seconds,
            verifyIpAllowlist: body.verify_ip_allowlist,
            allowedCidrs: body.allowed_cidrs,
            idempotencyHeaderNames: body.idempotency_header_names,
            ingestResponseCode: body.ingest_response_code,
            signingEnabled: body.signing_enabled,
            maxBodyBytes: body.max_body_bytes,
            retentionDays: body.retention_days,
            resignLate: body.resign_late,
            ...eventTypePatch(body, row),
          };
          const effective: EffectiveSettings = {
            mode: patch.mode ?? row.mode,
            url: patch.url ?? row.url,
            verifyStaticToken: patch.verifyStaticToken ?? row.verify_static_token,
            staticTokenHeaderName: patch.staticTokenHeaderName !== undefined ? patch.staticTokenHeaderName : row.static_token_header_name,
            staticTokenQueryParam: patch.staticTokenQueryParam !== undefined ? patch.staticTokenQueryParam : row.static_token_query_param,
            hasStaticToken: patch.staticTokenHash !== undefined || row.has_static_token,
            verifyHmac: patch.verifyHmac ?? row.verify_hmac,
            hmacScheme: patch.hmacScheme ?? row.hmac_scheme,
            hmacHeaderName: patch.hmacHeaderName !== undefined ? patch.hmacHeaderName : row.hmac_header_name,
            hasHmacSecret: patch.hmacSecretEncrypted !== undefined || row.hmac_secret_encrypted !== null,
            verifyIpAllowlist: patch.verifyIpAllowlist ?? row.verify_ip_allowlist,
            allowedCidrs: patch.allowedCidrs ?? row.allowed_cidrs,
          };
          const problems = settingsProblems(effective);
          if (problems.length > 0) throw invalid(problems);
          if (effective.hmacScheme === 'standard_webhooks') {
            // A stored secret is judged again only when this request makes it the one that verifies.
            const stored = row.hmac_secret_encrypted;
            const recheckStored = effective.verifyHmac && (body.hmac_scheme !== undefined || body.verify_hmac === true);
            const secret = body.hmac_secret ?? (recheckStored && stored !== null ? services.secretBox.decrypt(stored) : undefined);
            const problem = secret === undefined ? null : standardWebhooksSecretProblem(secret);
            if (problem !== null) throw invalid([{ path: 'body.hmac_secret', message: problem }]);
          }
          const released = patch.url !== undefined && patch.url !== '' && patch.url !== row.url
            ? await releaseExpiredInboundUrl(tx, principal.project_id, patch.url)
            : [];
          if (!(await updateInboundEndpoint(tx, principal.project_id, row.id, patch))) throw endpointNotFound(id);
          // An existing key (even from an earlier time signing was on) is kept, so receivers that
          // already verify with it keep working; only an endpoint that never had one gets a key.
          if (patch.signingEnabled === true && (await listActiveSigningKeys(tx, row.id)).length === 0) {
            await createSigningKey(tx, services.secretBox, row.id);
          }
          // The stored id, not the path's spelling: signing keys are owned by the canonical text.
          return { endpointId: row.id, released };
        }),
      );
      await announceChanged(services, [endpointId, ...released]);
      return { data: { id: endpointId, updated: true as const }, meta: { request_id: request.id } };
    },
  );
}
