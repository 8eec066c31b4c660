import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  EndpointDeleteOut,
  IdParams,
  newSecretToken,
  newUuidv7,
  PageMeta,
  PauseOut,
  PullEndpointCreateIn,
  PullEndpointCreateOut,
  PullEndpointListQuery,
  PullEndpointOut,
  PullEndpointUpdateIn,
  successEnvelope,
} from '@hookrelay/shared';
import {
  countPullEvents,
  findPullEndpoint,
  insertPullEndpoint,
  listPullEndpoints,
  lockPullEndpoint,
  softDeletePullEndpoint,
  updatePullEndpoint,
  type PullEndpointPatch,
} from '../db/pull-endpoints.js';
import { endpointNotFound } from '../errors.js';
import { readPage, SEQ_KEYSET } from '../lib/cursor.js';
import { principalOf } from '../plugins/auth.js';
import { sha256Hex } from '../security/crypto.js';
import { refuseNul } from '../security/text.js';
import { eventTypePatch } from '../http/event-type-patch.js';
import { PAUSE_ACTIONS } from '../http/pause.js';
import { assertEndpointBodyLimit } from '../ingest/body-limit.js';
import { toPullEndpointOut } from '../views/pull-endpoint.js';

/** retention_days when none is given (1–90 may be; docs/api.md, Pull endpoints and events). */
export const DEFAULT_RETENTION_DAYS = 7;
/** ttl_minutes of an ephemeral endpoint when none is given, as for the other endpoints. */
const DEFAULT_TTL_MINUTES = 30;

const CreateBody = refuseNul(PullEndpointCreateIn);
const UpdateBody = refuseNul(PullEndpointUpdateIn);

export async function pullEndpointRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;

  app.post(
    '/pull-endpoints',
    { schema: { body: CreateBody, response: { 201: successEnvelope(PullEndpointCreateOut) } } },
    async (request, reply) => {
      const body = request.body;
      assertEndpointBodyLimit(services.config, body.max_body_bytes);
      const secretToken = newSecretToken();
      const expiresAt = body.ephemeral ? new Date(Date.now() + (body.ttl_minutes ?? DEFAULT_TTL_MINUTES) * 60_000) : null;
      const row = await insertPullEndpoint(sql, {
        id: newUuidv7(),
        projectId: principalOf(request).project_id,
        name: body.name,
        description: body.description ?? '',
        retentionDays: body.retention_days ?? DEFAULT_RETENTION_DAYS,
        eventTypeSource: body.event_type_source ?? null,
        eventTypePath: body.event_type_path ?? null,
        maxBodyBytes: body.max_body_bytes ?? null,
        secretTokenHash: sha256Hex(secretToken),
        expiresAt,
      });
      const record = toPullEndpointOut(row, services.receiveBase());
      reply.status(201);
      return {
        data: { ...record, secret_token: secretToken, full_ingest_url: `${record.ingest_url}/${secretToken}` },
        meta: { request_id: request.id },
      };
    },
  );

  app.get(
    '/pull-endpoints',
    { schema: { querystring: PullEndpointListQuery, response: { 200: successEnvelope(z.array(PullEndpointOut), PageMeta) } } },
    async (request) => {
      const projectId = principalOf(request).project_id;
      const page = await readPage(request.query, SEQ_KEYSET, (keyset) => listPullEndpoints(sql, projectId, keyset));
      return { data: page.rows.map((row) => toPullEndpointOut(row, services.receiveBase())), meta: { request_id: request.id, next_cursor: page.nextCursor } };
    },
  );

  app.get(
    '/pull-endpoints/:id',
    { schema: { params: IdParams, response: { 200: successEnvelope(PullEndpointOut) } } },
    async (request) => {
      const row = await findPullEndpoint(sql, principalOf(request).project_id, request.params.id);
      if (!row) throw endpointNotFound(request.params.id);
      return { data: toPullEndpointOut(row, services.receiveBase(), await countPullEvents(sql, row.id)), meta: { request_id: request.id } };
    },
  );

  app.patch(
    '/pull-endpoints/:id',
    { schema: { params: IdParams, body: UpdateBody, response: { 200: successEnvelope(PullEndpointOut) } } },
    async (request) => {
      const projectId = principalOf(request).project_id;
      const { id } = request.params;
      const body = request.body ?? {};
      assertEndpointBodyLimit(services.config, body.max_body_bytes);
      const row = await sql.begin(async (tx) => {
        // Locked, so the stored half of the extraction settings cannot change under the check.
        const stored = await lockPullEndpoint(tx, projectId, id);
        if (!stored) throw endpointNotFound(id);
        const patch: PullEndpointPatch = {
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.description !== undefined ? { description: body.description } : {}),
          ...(body.retention_days !== undefined ? { retentionDays: body.retention_days } : {}),
          ...(body.max_body_bytes !== undefined ? { maxBodyBytes: body.max_body_bytes } : {}),
          ...eventTypePatch(body, stored),
        };
        return updatePullEndpoint(tx, projectId, stored.id, patch);
      });
      if (!row) throw endpointNotFound(id);
      return { data: toPullEndpointOut(row, services.receiveBase()), meta: { request_id: request.id } };
    },
  );

  const setPaused = async (projectId: string, id: string, paused: boolean): Promise<PauseOut> => {
    const row = await updatePullEndpoint(sql, projectId, id, { paused });
    if (!row) throw endpointNotFound(id);
    return { id: row.id, paused: row.paused };
  };

  for (const [action, paused] of PAUSE_ACTIONS) {
    app.post(
      `/pull-endpoints/:id/${action}`,
      { schema: { params: IdParams, response: { 200: successEnvelope(PauseOut) } } },
      async (request) => ({ data: await setPaused(principalOf(request).project_id, request.params.id, paused), meta: { request_id: request.id } }),
    );
  }

  app.delete(
    '/pull-endpoints/:id',
    { schema: { params: IdParams, response: { 200: successEnvelope(EndpointDeleteOut) } } },
    async (request) => {
      const row = await softDeletePullEndpoint(sql, principalOf(request).project_id, request.params.id);
      if (!row) throw endpointNotFound(request.params.id);
      return { data: { id: row.id, deleted: true as const }, meta: { request_id: request.id } };
    },
  );
}
