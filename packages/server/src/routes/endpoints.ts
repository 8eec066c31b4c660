import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  EndpointCreateIn,
  EndpointCreateOut,
  EndpointDeleteOut,
  EndpointIdParams,
  EndpointOut,
  EndpointSummaryOut,
  EndpointUpdateIn,
  OutboundEndpointListQuery,
  PageMeta,
  PauseOut,
  RotateSecretOut,
  newEndpointId,
  successEnvelope,
} from '@hookrelay/shared';
import { findEndpoint, insertEndpoint, lockEndpoint, listEndpoints, softDeleteEndpoint, updateEndpoint, type EndpointRow } from '../db/endpoints.js';
import { replaceEndpointSubscriptions } from '../db/endpoint-subscriptions.js';
import type { Sql } from '../db/database.js';
import { AppError, endpointNotFound } from '../errors.js';
import { assertDestinationAllowed } from '../http/destination.js';
import { PAUSE_ACTIONS } from '../http/pause.js';
import { readPage, SEQ_KEYSET } from '../lib/cursor.js';
import { createSigningKey, rotateSigningKey } from '../lib/signing-keys.js';
import { projectIdOf } from '../plugins/auth.js';
import { validateCustomHeaders } from '../security/headers.js';
import { refuseNul } from '../security/text.js';
import { subscriptionOf, toEndpointOut, toEndpointSummaryOut } from '../views/endpoint.js';

// Custom headers are exempt: their own check refuses NUL (with CR and LF) as INVALID_HEADERS, as documented.
const CreateBody = refuseNul(EndpointCreateIn, ['headers']);
const UpdateBody = refuseNul(EndpointUpdateIn, ['headers']);
const ListQuery = refuseNul(OutboundEndpointListQuery);

/** The endpoint's subscription rows, from its owner and event types as stored (in the write's transaction). */
const writeSubscriptions = (tx: Sql, row: EndpointRow) =>
  replaceEndpointSubscriptions(tx, { id: row.id, projectId: row.project_id, ownerId: row.owner_id, eventTypes: row.event_types });

function assertHeadersAllowed(headers: Record<string, string>): void {
  const result = validateCustomHeaders(headers);
  if (!result.ok) {
    throw new AppError('INVALID_HEADERS', result.message, { details: [{ path: `body.${result.path}`, message: result.message }] });
  }
}

async function setPaused(app: FastifyInstance, projectId: string, id: string, paused: boolean): Promise<PauseOut> {
  const row = await updateEndpoint(app.services.db.sql, projectId, id, { paused });
  if (!row) throw endpointNotFound(id);
  return { id: row.id, paused: row.paused };
}

export async function endpointRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;

  app.post(
    '/endpoints',
    { schema: { body: CreateBody, response: { 201: successEnvelope(EndpointCreateOut) } } },
    async (request, reply) => {
      const projectId = projectIdOf(request);
      const body = request.body;
      const headers = body.headers ?? {};
      assertHeadersAllowed(headers);
      await assertDestinationAllowed(services, body.url);
      const ephemeral = body.ephemeral ?? false;
      const expiresAt = ephemeral ? new Date(Date.now() + (body.ttl_minutes ?? 30) * 60_000) : null;
      const { endpoint, signing } = await sql.begin(async (tx) => {
        const endpoint = await insertEndpoint(tx, {
          id: newEndpointId(),
          projectId,
          url: body.url,
          description: body.description ?? '',
          rateLimitRps: body.rate_limit_rps ?? 0,
          burst: body.burst ?? 0,
          headers,
          expiresAt,
          subscription: { ownerId: body.owner_id ?? null, eventTypes: body.event_types ?? null, channels: body.channels ?? null },
          retentionDays: body.retention_days ?? null,
        });
        await writeSubscriptions(tx, endpoint);
        return { endpoint, signing: await createSigningKey(tx, services.secretBox, endpoint.id) };
      });
      reply.status(201);
      return {
        data: {
          id: endpoint.id,
          url: endpoint.url,
          description: endpoint.description,
          signing_key_id: signing.key.id,
          signing_secret: signing.secret,
          key_hint: signing.key.key_hint,
          ephemeral: endpoint.ephemeral,
          expires_at: endpoint.expires_at ? endpoint.expires_at.toISOString() : null,
          ...subscriptionOf(endpoint),
          created_at: endpoint.created_at.toISOString(),
        },
        meta: { request_id: request.id },
      };
    },
  );

  app.get(
    '/endpoints',
    { schema: { querystring: ListQuery, response: { 200: successEnvelope(z.array(EndpointSummaryOut), PageMeta) } } },
    async (request) => {
      const projectId = projectIdOf(request);
      const filters = { ownerId: request.query.owner_id, eventType: request.query.event_type };
      const page = await readPage(request.query, SEQ_KEYSET, (keyset) => listEndpoints(sql, projectId, filters, keyset));
      return { data: page.rows.map(toEndpointSummaryOut), meta: { request_id: request.id, next_cursor: page.nextCursor } };
    },
  );

  app.get(
    '/endpoints/:id',
    { schema: { params: EndpointIdParams, response: { 200: successEnvelope(EndpointOut) } } },
    async (request) => {
      const row = await findEndpoint(sql, projectIdOf(request), request.params.id);
      if (!row) throw endpointNotFound(request.params.id);
      return { data: toEndpointOut(row), meta: { request_id: request.id } };
    },
  );

  app.patch(
    '/endpoints/:id',
    { schema: { params: EndpointIdParams, body: UpdateBody, response: { 200: successEnvelope(EndpointOut) } } },
    async (request) => {
      const projectId = projectIdOf(request);
      const body = request.body ?? {};
      if (body.headers !== undefined) assertHeadersAllowed(body.headers);
      // Existence first, so an unknown id is 404 whatever the body says.
      if (!(await findEndpoint(sql, projectId, request.params.id))) throw endpointNotFound(request.params.id);
      if (body.url !== undefined) await assertDestinationAllowed(services, body.url);
      const resubscribes = body.owner_id !== undefined || body.event_types !== undefined;
      const row = await sql.begin(async (tx) => {
        const updated = await updateEndpoint(tx, projectId, request.params.id, {
          ...(body.url !== undefined ? { url: body.url } : {}),
          ...(body.description !== undefined ? { description: body.description } : {}),
          ...(body.rate_limit_rps !== undefined ? { rateLimitRps: body.rate_limit_rps } : {}),
          ...(body.burst !== undefined ? { burst: body.burst } : {}),
          ...(body.headers !== undefined ? { headers: body.headers } : {}),
          ...(body.paused !== undefined ? { paused: body.paused } : {}),
          ...(body.retention_days !== undefined ? { retentionDays: body.retention_days } : {}),
          subscription: {
            ...(body.owner_id !== undefined ? { ownerId: body.owner_id } : {}),
            ...(body.event_types !== undefined ? { eventTypes: body.event_types } : {}),
            ...(body.channels !== undefined ? { channels: body.channels } : {}),
          },
        });
        if (updated && resubscribes) await writeSubscriptions(tx, updated);
        return updated;
      });
      if (!row) throw endpointNotFound(request.params.id);
      return { data: toEndpointOut(row), meta: { request_id: request.id } };
    },
  );

  for (const [action, paused] of PAUSE_ACTIONS) {
    app.post(
      `/endpoints/:id/${action}`,
      { schema: { params: EndpointIdParams, response: { 200: successEnvelope(PauseOut) } } },
      async (request) => ({
        data: await setPaused(fastify, projectIdOf(request), request.params.id, paused),
        meta: { request_id: request.id },
      }),
    );
  }

  app.delete(
    '/endpoints/:id',
    { schema: { params: EndpointIdParams, response: { 200: successEnvelope(EndpointDeleteOut) } } },
    async (request) => {
      const row = await softDeleteEndpoint(sql, projectIdOf(request), request.params.id);
      if (!row) throw endpointNotFound(request.params.id);
      return { data: { id: row.id, deleted: true as const }, meta: { request_id: request.id } };
    },
  );

  app.post(
    '/endpoints/:id/rotate-secret',
    { schema: { params: EndpointIdParams, response: { 200: successEnvelope(RotateSecretOut) } } },
    async (request) => {
      const projectId = projectIdOf(request);
      const { id } = request.params;
      const rotation = await rotateSigningKey(sql, services.secretBox, (tx) => lockEndpoint(tx, projectId, id));
      if (!rotation) throw endpointNotFound(id);
      return { data: rotation.rotated, meta: { request_id: request.id } };
    },
  );
}
