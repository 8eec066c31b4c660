import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  BulkJobEstimateOut,
  BulkJobListQuery,
  BulkJobOut,
  BulkRetryCreateIn,
  DEFAULT_BULK_RETRY_STATUSES,
  IdParams,
  InboundReplayCreateIn,
  newUuidv7,
  PageMetaWithMore,
  successEnvelope,
} from '@hookrelay/shared';
import {
  cancelBulkJob,
  countInboundMatches,
  countOutboundMatches,
  findBulkJob,
  insertInboundJob,
  insertOutboundJob,
  listBulkJobs,
  type BulkJobRow,
  type InboundScope,
  type OutboundScope,
} from '../db/bulk-jobs.js';
import { BULK_JOBS_CHANNEL } from '../db/channels.js';
import type { Sql } from '../db/database.js';
import { findInboundEndpoint } from '../db/inbound-endpoints.js';
import { notifyOnCommit } from '../db/notify.js';
import { endpointNotFound, notFound } from '../errors.js';
import { ID_KEYSET, readPage } from '../lib/cursor.js';
import { principalOf, projectIdOf } from '../plugins/auth.js';
import { refuseNul } from '../security/text.js';
import { toBulkJobOut } from '../views/bulk-job.js';

const RetryBody = refuseNul(BulkRetryCreateIn);
const ReplayBody = refuseNul(InboundReplayCreateIn);
const CreatedOrCounted = { 200: successEnvelope(BulkJobEstimateOut), 202: successEnvelope(BulkJobOut) };

/**
 * Bulk recovery jobs (docs/api.md, Bulk retries and replays): POST /v1/bulk-retries retries the
 * outbound messages a filter matches, POST /v1/inbound-endpoints/{id}/replays replays an inbound
 * endpoint's messages; both are jobs the worker role runs, read, listed and cancelled under
 * /v1/bulk-retries. A dry run counts and starts nothing.
 */
export async function bulkRetryRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { sql } = fastify.services.db;

  /** Stores a job and wakes the workers at its commit (a job that matched nothing is done already). */
  const startJob = (insert: (tx: Sql, id: string) => Promise<BulkJobRow>): Promise<BulkJobRow> =>
    sql.begin(async (tx) => {
      const job = await insert(tx, newUuidv7());
      if (job.status === 'running') await notifyOnCommit(tx, BULK_JOBS_CHANNEL, '');
      return job;
    });

  app.post(
    '/bulk-retries',
    { schema: { body: RetryBody, response: CreatedOrCounted } },
    async (request, reply) => {
      const { filter, dry_run: dryRun } = request.body;
      const scope: OutboundScope = {
        projectId: projectIdOf(request),
        endpointId: filter.endpoint_id ?? null,
        ownerId: filter.owner_id ?? null,
        eventType: filter.event_type ?? null,
        statuses: filter.status ?? DEFAULT_BULK_RETRY_STATUSES,
        from: filter.created_after,
        to: filter.created_before ?? null,
      };
      if (dryRun === true) return reply.status(200).send({ data: { matched: await countOutboundMatches(sql, scope) }, meta: { request_id: request.id } });
      const job = await startJob((tx, id) => insertOutboundJob(tx, id, scope));
      return reply.status(202).send({ data: toBulkJobOut(job), meta: { request_id: request.id } });
    },
  );

  app.post(
    '/inbound-endpoints/:id/replays',
    { schema: { params: IdParams, body: ReplayBody, response: CreatedOrCounted } },
    async (request, reply) => {
      const projectId = principalOf(request).project_id;
      const endpoint = await findInboundEndpoint(sql, projectId, request.params.id);
      if (!endpoint) throw endpointNotFound(request.params.id);
      const body = request.body;
      const scope: InboundScope = {
        projectId,
        endpointId: endpoint.id,
        eventType: body.event_type ?? null,
        statuses: body.status ?? null,
        from: body.received_after,
        to: body.received_before ?? null,
      };
      if (body.dry_run === true) return reply.status(200).send({ data: { matched: await countInboundMatches(sql, scope) }, meta: { request_id: request.id } });
      const job = await startJob((tx, id) => insertInboundJob(tx, id, scope));
      return reply.status(202).send({ data: toBulkJobOut(job), meta: { request_id: request.id } });
    },
  );

  app.get(
    '/bulk-retries',
    { schema: { querystring: BulkJobListQuery, response: { 200: successEnvelope(z.array(BulkJobOut), PageMetaWithMore) } } },
    async (request) => {
      const projectId = principalOf(request).project_id;
      const page = await readPage(request.query, ID_KEYSET, (keyset) => listBulkJobs(sql, projectId, keyset));
      return { data: page.rows.map(toBulkJobOut), meta: { request_id: request.id, has_more: page.hasMore, next_cursor: page.nextCursor } };
    },
  );

  app.get(
    '/bulk-retries/:id',
    { schema: { params: IdParams, response: { 200: successEnvelope(BulkJobOut) } } },
    async (request) => {
      const row = await findBulkJob(sql, projectIdOf(request), request.params.id);
      if (!row) throw notFound('bulk job', request.params.id);
      return { data: toBulkJobOut(row), meta: { request_id: request.id } };
    },
  );

  // A job that has ended is answered as it is: cancelling it again changes nothing.
  app.post(
    '/bulk-retries/:id/cancel',
    { schema: { params: IdParams, response: { 200: successEnvelope(BulkJobOut) } } },
    async (request) => {
      const projectId = principalOf(request).project_id;
      const row = (await cancelBulkJob(sql, projectId, request.params.id)) ?? (await findBulkJob(sql, projectId, request.params.id));
      if (!row) throw notFound('bulk job', request.params.id);
      return { data: toBulkJobOut(row), meta: { request_id: request.id } };
    },
  );
}
