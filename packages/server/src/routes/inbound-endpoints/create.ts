import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { InboundEndpointCreateIn, InboundEndpointCreateOut, newSecretToken, newUuidv7, successEnvelope, type InboundMode } from '@hookrelay/shared';
import { insertInboundEndpoint, releaseExpiredInboundUrl } from '../../db/inbound-endpoints.js';
import { assertDestinationAllowed } from '../../http/destination.js';
import { assertEndpointBodyLimit } from '../../ingest/body-limit.js';
import { createSigningKey } from '../../lib/signing-keys.js';
import { principalOf } from '../../plugins/auth.js';
import { sha256Hex } from '../../security/crypto.js';
import { refuseNul } from '../../security/text.js';
import { inboundIngestUrl, shownInboundUrl } from '../../views/inbound-endpoint.js';
import { assertCidrsValid, invalid, settingsProblems, standardWebhooksSecretProblem } from './settings.js';
import { announceChanged, mapDuplicateUrl } from './url.js';

const DEFAULT_TTL_MINUTES = 30;
const DEFAULT_TIMESTAMP_TOLERANCE_SECONDS = 300;
const DEFAULT_INGEST_RESPONSE_CODE = 200;

const CreateBody = refuseNul(InboundEndpointCreateIn);

/**
 * POST /v1/inbound-endpoints: every switched-on check must be complete before anything is stored;
 * the answer holds the secret token and, when signing is on, the first signing key's secret.
 */
export function inboundEndpointCreateRoute(fastify: FastifyInstance): void {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;

  app.post(
    '/inbound-endpoints',
    { schema: { body: CreateBody, response: { 201: successEnvelope(InboundEndpointCreateOut) } } },
    async (request, reply) => {
      const principal = principalOf(request);
      const body = request.body;
      const url = body.url ?? '';
      const mode: InboundMode = body.mode ?? (url !== '' ? 'forward' : 'cli');
      const hmacScheme = body.hmac_scheme ?? 'hex';
      const problems = settingsProblems({
        mode,
        url,
        verifyStaticToken: body.verify_static_token ?? false,
        staticTokenHeaderName: body.static_token_header_name ?? null,
        staticTokenQueryParam: body.static_token_query_param ?? null,
        hasStaticToken: body.static_token !== undefined,
        verifyHmac: body.verify_hmac ?? false,
        hmacScheme,
        hmacHeaderName: body.hmac_header_name ?? null,
        hasHmacSecret: body.hmac_secret !== undefined,
        verifyIpAllowlist: body.verify_ip_allowlist ?? false,
        allowedCidrs: body.allowed_cidrs ?? [],
      });
      if (problems.length > 0) throw invalid(problems);
      assertCidrsValid(body.allowed_cidrs);
      assertEndpointBodyLimit(services.config, body.max_body_bytes);
      if (body.hmac_secret !== undefined && hmacScheme === 'standard_webhooks') {
        const problem = standardWebhooksSecretProblem(body.hmac_secret);
        if (problem !== null) throw invalid([{ path: 'body.hmac_secret', message: problem }]);
      }
      if (url !== '') await assertDestinationAllowed(services, url);

      const ephemeral = body.ephemeral ?? false;
      const expiresAt = ephemeral ? new Date(Date.now() + (body.ttl_minutes ?? DEFAULT_TTL_MINUTES) * 60_000) : null;
      const secretToken = newSecretToken();
      const { endpoint, signing, released } = await mapDuplicateUrl(() =>
        sql.begin(async (tx) => {
          const released = url !== '' ? await releaseExpiredInboundUrl(tx, principal.project_id, url) : [];
          const endpoint = await insertInboundEndpoint(tx, {
            id: newUuidv7(),
            projectId: principal.project_id,
            name: body.name,
            description: body.description ?? '',
            mode,
            url,
            secretTokenEncrypted: services.secretBox.encrypt(secretToken),
            secretTokenHash: sha256Hex(secretToken),
            verifyStaticToken: body.verify_static_token ?? false,
            staticTokenHeaderName: body.static_token_header_name ?? null,
            staticTokenQueryParam: body.static_token_query_param ?? null,
            staticTokenHash: body.static_token !== undefined ? sha256Hex(body.static_token) : null,
            verifyHmac: body.verify_hmac ?? false,
            hmacScheme,
            hmacHeaderName: body.hmac_header_name ?? null,
            hmacSecretEncrypted: body.hmac_secret !== undefined ? services.secretBox.encrypt(body.hmac_secret) : null,
            timestampHeaderName: body.timestamp_header_name ?? null,
            timestampToleranceSeconds: body.timestamp_tolerance_seconds ?? DEFAULT_TIMESTAMP_TOLERANCE_SECONDS,
            verifyIpAllowlist: body.verify_ip_allowlist ?? false,
            allowedCidrs: body.allowed_cidrs ?? [],
            idempotencyHeaderNames: body.idempotency_header_names ?? [],
            ingestResponseCode: body.ingest_response_code ?? DEFAULT_INGEST_RESPONSE_CODE,
            signingEnabled: body.signing_enabled ?? false,
            expiresAt,
            eventTypeSource: body.event_type_source ?? null,
            eventTypePath: body.event_type_path ?? null,
            maxBodyBytes: body.max_body_bytes ?? null,
            retentionDays: body.retention_days ?? null,
            resignLate: body.resign_late ?? true,
          });
          const signing = body.signing_enabled ? await createSigningKey(tx, services.secretBox, endpoint.id) : null;
          return { endpoint, signing, released };
        }),
      );
      await announceChanged(services, released);
      reply.status(201);
      return {
        data: {
          id: endpoint.id,
          name: endpoint.name,
          url: shownInboundUrl(endpoint),
          mode: endpoint.mode,
          ingest_url: inboundIngestUrl(services.receiveBase(), secretToken),
          secret_token: secretToken,
          ...(signing ? { signing_key_id: signing.key.id, signing_secret: signing.secret, key_hint: signing.key.key_hint } : {}),
          ephemeral: endpoint.ephemeral,
          expires_at: endpoint.expires_at ? endpoint.expires_at.toISOString() : null,
          created_at: endpoint.created_at.toISOString(),
        },
        meta: { request_id: request.id },
      };
    },
  );
}
