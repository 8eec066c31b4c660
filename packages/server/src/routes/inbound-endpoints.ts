import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  EndpointDeleteOut,
  EndpointListQuery,
  IdParams,
  InboundEndpointCreateIn,
  InboundEndpointCreateOut,
  InboundEndpointOut,
  InboundEndpointSummaryOut,
  InboundEndpointUpdateIn,
  InboundEndpointUpdateOut,
  PageMeta,
  PauseOut,
  RotateSecretOut,
  newSecretToken,
  newUuidv7,
  successEnvelope,
  uuidv7AtTime,
  type ErrorDetail,
  type HmacScheme,
  type InboundMode,
} from '@hookrelay/shared';
import type { InboundEndpointActivity, InboundEndpointDetailRow, InboundEndpointPatch, InboundEndpointSummaryRow } from '../db/inbound-endpoints.js';
import {
  countInboundEndpointActivity,
  findInboundEndpoint,
  insertInboundEndpoint,
  isDuplicateInboundUrl,
  listInboundEndpoints,
  lockInboundEndpoint,
  releaseExpiredInboundUrl,
  softDeleteInboundEndpoint,
  updateInboundEndpoint,
} from '../db/inbound-endpoints.js';
import { listActiveSigningKeys } from '../db/signing-keys.js';
import { STALE_AFTER_SECONDS } from '../db/stream-connections.js';
import type { Sql } from '../db/database.js';
import { AppError, endpointNotFound } from '../errors.js';
import { validateCidr } from '../ingest/verify.js';
import { readPage, SEQ_KEYSET } from '../lib/cursor.js';
import { createSigningKey, rotateSigningKey } from '../lib/signing-keys.js';
import { principalOf } from '../plugins/auth.js';
import { sha256Hex } from '../security/crypto.js';
import { refuseNul } from '../security/text.js';
import type { AppServices } from '../services.js';
import { assertDestinationAllowed, PAUSE_ACTIONS } from './endpoints.js';
import { eventTypePatch } from './event-type-settings.js';
import { assertEndpointBodyLimit } from '../ingest/body-limit.js';

const DEFAULT_TTL_MINUTES = 30;
const DEFAULT_TIMESTAMP_TOLERANCE_SECONDS = 300;
const DEFAULT_INGEST_RESPONSE_CODE = 200;

const CreateBody = refuseNul(InboundEndpointCreateIn);
const UpdateBody = refuseNul(InboundEndpointUpdateIn);

/** Schemes whose preset names the signature header; `hex` and `base64` need `hmac_header_name`. */
const SCHEMES_NEEDING_HEADER: ReadonlySet<HmacScheme> = new Set(['hex', 'base64']);

/**
 * A cli endpoint may keep a URL for a later switch to forward, but shows none (docs/api.md, Inbound
 * endpoints).
 */
function shownUrl(row: Pick<InboundEndpointSummaryRow, 'mode' | 'url'>): string {
  return row.mode === 'cli' ? '' : row.url;
}

function ingestUrl(services: AppServices, secretToken: string): string {
  return `${services.receiveBase()}/in/${secretToken}`;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const NO_ACTIVITY: InboundEndpointActivity = { connected_listeners: 0, messages_24h: 0 };

/** `connected_listeners` and `messages_24h` of the endpoints shown (a page, or one record). */
async function activityOf(sql: Sql, ids: readonly string[]): Promise<Map<string, InboundEndpointActivity>> {
  return countInboundEndpointActivity(sql, ids, uuidv7AtTime(Date.now() - DAY_MS), STALE_AFTER_SECONDS);
}

function toInboundEndpointOut(row: InboundEndpointDetailRow, services: AppServices, activity: InboundEndpointActivity): InboundEndpointOut {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    url: shownUrl(row),
    mode: row.mode,
    // Deleted and expired endpoints are never read back, so whatever is shown is active.
    active: true,
    paused: row.paused,
    verify_static_token: row.verify_static_token,
    static_token_header_name: row.static_token_header_name,
    static_token_query_param: row.static_token_query_param,
    verify_hmac: row.verify_hmac,
    hmac_scheme: row.hmac_scheme,
    hmac_header_name: row.hmac_header_name,
    timestamp_header_name: row.timestamp_header_name,
    timestamp_tolerance_seconds: row.timestamp_tolerance_seconds,
    verify_ip_allowlist: row.verify_ip_allowlist,
    allowed_cidrs: row.allowed_cidrs,
    ingest_response_code: row.ingest_response_code,
    max_body_bytes: row.max_body_bytes,
    idempotency_header_names: row.idempotency_header_names,
    signing_enabled: row.signing_enabled,
    signing_key_id: row.signing_key_id,
    key_hint: row.key_hint,
    ingest_url: ingestUrl(services, services.secretBox.decrypt(row.secret_token_encrypted)),
    ephemeral: row.ephemeral,
    ...(row.expires_at ? { expires_at: row.expires_at.toISOString() } : {}),
    rejected_count: row.rejected_count,
    rejections_dropped_count: row.rejections_dropped_count,
    ...(row.mode === 'cli' ? { latest_message_id: row.last_message_id } : {}),
    event_type_source: row.event_type_source,
    event_type_path: row.event_type_path,
    connected_listeners: activity.connected_listeners,
    messages_24h: activity.messages_24h,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

function toInboundEndpointSummary(row: InboundEndpointSummaryRow, activity: InboundEndpointActivity): InboundEndpointSummaryOut {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    url: shownUrl(row),
    mode: row.mode,
    active: true,
    paused: row.paused,
    ephemeral: row.ephemeral,
    expires_at: row.expires_at ? row.expires_at.toISOString() : null,
    connected_listeners: activity.connected_listeners,
    messages_24h: activity.messages_24h,
    created_at: row.created_at.toISOString(),
  };
}

function invalid(details: ErrorDetail[]): AppError {
  return new AppError('INVALID_REQUEST', details.map((d) => `${d.path}: ${d.message}`).join('; '), { details });
}

const duplicateUrl = () =>
  new AppError('DUPLICATE_URL', 'body.url: an inbound endpoint with this url already exists in the project', {
    details: [{ path: 'body.url', message: 'an inbound endpoint with this url already exists in the project' }],
  });

/** The verification module's parser is the one ingestion uses, so nothing is stored that it would drop. */
function assertCidrsValid(cidrs: readonly string[] | undefined): void {
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
function standardWebhooksSecretProblem(secret: string): string | null {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || Buffer.from(encoded, 'base64').length === 0) {
    return 'must be whsec_ followed by base64 when hmac_scheme is standard_webhooks';
  }
  return null;
}

/** The settings an endpoint would have after a create or PATCH: what the checks below judge. */
interface EffectiveSettings {
  mode: InboundMode;
  url: string;
  verifyStaticToken: boolean;
  staticTokenHeaderName: string | null;
  staticTokenQueryParam: string | null;
  hasStaticToken: boolean;
  verifyHmac: boolean;
  hmacScheme: HmacScheme;
  hmacHeaderName: string | null;
  hasHmacSecret: boolean;
  verifyIpAllowlist: boolean;
  allowedCidrs: readonly string[];
}

/**
 * Every switched-on check must be complete, whether its parts come from this request or were stored
 * before: a check that cannot work would refuse every webhook (ingestion fails closed).
 */
function settingsProblems(s: EffectiveSettings): ErrorDetail[] {
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

/** `""` in a PATCH clears an optional text setting (InboundEndpointUpdateIn). */
function clearable(value: string | undefined): string | null | undefined {
  return value === undefined ? undefined : value === '' ? null : value;
}

/** Runs a write that may take a URL; the unique index is the only race-free DUPLICATE_URL check. */
async function mapDuplicateUrl<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isDuplicateInboundUrl(error)) throw duplicateUrl();
    throw error;
  }
}

export async function inboundEndpointRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;

  const changed = async (ids: readonly string[]) => {
    for (const id of ids) await services.inboundEndpointChanged(id);
  };

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
          });
          const signing = body.signing_enabled ? await createSigningKey(tx, services.secretBox, endpoint.id) : null;
          return { endpoint, signing, released };
        }),
      );
      await changed(released);
      reply.status(201);
      return {
        data: {
          id: endpoint.id,
          name: endpoint.name,
          url: shownUrl(endpoint),
          mode: endpoint.mode,
          ingest_url: ingestUrl(services, secretToken),
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

  app.get(
    '/inbound-endpoints',
    { schema: { querystring: EndpointListQuery, response: { 200: successEnvelope(z.array(InboundEndpointSummaryOut), PageMeta) } } },
    async (request) => {
      const projectId = principalOf(request).project_id;
      const page = await readPage(request.query, SEQ_KEYSET, (keyset) => listInboundEndpoints(sql, projectId, keyset));
      const activity = await activityOf(sql, page.rows.map((r) => r.id));
      return {
        data: page.rows.map((row) => toInboundEndpointSummary(row, activity.get(row.id) ?? NO_ACTIVITY)),
        meta: { request_id: request.id, next_cursor: page.nextCursor },
      };
    },
  );

  app.get(
    '/inbound-endpoints/:id',
    { schema: { params: IdParams, response: { 200: successEnvelope(InboundEndpointOut) } } },
    async (request) => {
      const row = await findInboundEndpoint(sql, principalOf(request).project_id, request.params.id);
      if (!row) throw endpointNotFound(request.params.id);
      const activity = await activityOf(sql, [row.id]);
      return { data: toInboundEndpointOut(row, services, activity.get(row.id) ?? NO_ACTIVITY), meta: { request_id: request.id } };
    },
  );

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
      await changed([endpointId, ...released]);
      return { data: { id: endpointId, updated: true as const }, meta: { request_id: request.id } };
    },
  );

  const setPaused = async (projectId: string, id: string, paused: boolean): Promise<PauseOut> => {
    const row = await updateInboundEndpoint(sql, projectId, id, { paused });
    if (!row) throw endpointNotFound(id);
    await services.inboundEndpointChanged(row.id);
    return { id: row.id, paused: row.paused };
  };

  for (const [action, paused] of PAUSE_ACTIONS) {
    app.post(
      `/inbound-endpoints/:id/${action}`,
      { schema: { params: IdParams, response: { 200: successEnvelope(PauseOut) } } },
      async (request) => ({
        data: await setPaused(principalOf(request).project_id, request.params.id, paused),
        meta: { request_id: request.id },
      }),
    );
  }

  app.delete(
    '/inbound-endpoints/:id',
    { schema: { params: IdParams, response: { 200: successEnvelope(EndpointDeleteOut) } } },
    async (request) => {
      const row = await softDeleteInboundEndpoint(sql, principalOf(request).project_id, request.params.id);
      if (!row) throw endpointNotFound(request.params.id);
      await services.inboundEndpointChanged(row.id);
      return { data: { id: row.id, deleted: true as const }, meta: { request_id: request.id } };
    },
  );

  // The only way to see a signing secret again after create, e.g. for a key that PATCH
  // signing_enabled created (PATCH answers only { id, updated }).
  app.post(
    '/inbound-endpoints/:id/rotate-secret',
    { schema: { params: IdParams, response: { 200: successEnvelope(RotateSecretOut) } } },
    async (request) => {
      const projectId = principalOf(request).project_id;
      const { id } = request.params;
      const rotation = await rotateSigningKey(sql, services.secretBox, (tx) => lockInboundEndpoint(tx, projectId, id));
      if (!rotation) throw endpointNotFound(id);
      await services.inboundEndpointChanged(rotation.ownerId);
      return { data: rotation.rotated, meta: { request_id: request.id } };
    },
  );
}
