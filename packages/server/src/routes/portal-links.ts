import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  newPortalToken,
  PageMeta,
  PORTAL_LINK_LIMITS,
  PortalLinkCreateIn,
  PortalLinkCreateOut,
  PortalLinkIdParams,
  PortalLinkListQuery,
  PortalLinkOut,
  PortalLinkRevokeOut,
  PortalSessionOut,
  successEnvelope,
} from '@hookrelay/shared';
import { insertPortalLink, listPortalLinks, revokePortalLink } from '../db/portal-links.js';
import { AppError, notFound } from '../errors.js';
import { ID_KEYSET, readPage } from '../lib/cursor.js';
import { principalOf } from '../plugins/auth.js';
import { sha256Hex } from '../security/crypto.js';
import { refuseNul } from '../security/text.js';
import { toPortalLinkOut } from '../views/portal-link.js';

const CreateBody = refuseNul(PortalLinkCreateIn);
const ListQuery = refuseNul(PortalLinkListQuery);

/**
 * Portal links (docs/api.md, Portal links): an API key makes, lists and revokes them; the token of
 * one reads its own session. The token travels in the URL's fragment, which a browser never sends,
 * so no request line or access log holds it.
 */
export async function portalLinkRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;

  app.post(
    '/portal-links',
    { schema: { body: CreateBody, response: { 201: successEnvelope(PortalLinkCreateOut) } } },
    async (request, reply) => {
      const projectId = principalOf(request).project_id;
      const body = request.body;
      const token = newPortalToken();
      const row = await insertPortalLink(sql, {
        projectId,
        ownerId: body.owner_id,
        tokenHash: sha256Hex(token),
        readOnly: body.read_only ?? false,
        expiresInMinutes: body.expires_in_minutes ?? PORTAL_LINK_LIMITS.defaultMinutes,
      });
      reply.status(201);
      const { revoked_at: _never, ...link } = toPortalLinkOut(row);
      return { data: { ...link, url: `${services.receiveBase()}/portal#token=${token}`, token }, meta: { request_id: request.id } };
    },
  );

  app.get(
    '/portal-links',
    { schema: { querystring: ListQuery, response: { 200: successEnvelope(z.array(PortalLinkOut), PageMeta) } } },
    async (request) => {
      const projectId = principalOf(request).project_id;
      const page = await readPage(request.query, ID_KEYSET, (keyset) => listPortalLinks(sql, projectId, { ownerId: request.query.owner_id }, keyset));
      return { data: page.rows.map(toPortalLinkOut), meta: { request_id: request.id, next_cursor: page.nextCursor } };
    },
  );

  app.delete(
    '/portal-links/:id',
    { schema: { params: PortalLinkIdParams, response: { 200: successEnvelope(PortalLinkRevokeOut) } } },
    async (request) => {
      const row = await revokePortalLink(sql, principalOf(request).project_id, request.params.id);
      if (!row) throw notFound('portal link', request.params.id);
      return { data: { ...toPortalLinkOut(row), revoked_at: row.revoked_at!.toISOString() }, meta: { request_id: request.id } };
    },
  );

  app.get(
    '/portal/session',
    { schema: { response: { 200: successEnvelope(PortalSessionOut) } } },
    async (request) => {
      const portal = request.portal;
      // An API key has no portal session: for it the route is one that does not exist.
      if (portal === undefined) throw new AppError('NOT_FOUND', 'an API key has no portal session: this route answers portal tokens');
      return {
        data: { owner_id: portal.owner_id, read_only: portal.read_only, expires_at: portal.expires_at.toISOString(), project_name: portal.project_name },
        meta: { request_id: request.id },
      };
    },
  );
}
