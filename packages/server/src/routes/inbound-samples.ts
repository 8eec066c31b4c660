import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  applySampleEdits,
  IdParams,
  InboundSampleIn,
  InboundSampleOut,
  INGEST_DUPLICATE_HEADER,
  isErrorCode,
  randomSampleContext,
  SAMPLE_SIGNATURE,
  sampleBody,
  sampleOutcome,
  sampleRequest,
  successEnvelope,
  type SampleProvider,
} from '@hookrelay/shared';
import { findInboundEndpoint } from '../db/inbound-endpoints.js';
import { AppError, endpointNotFound } from '../errors.js';
import { HMAC_PRESET_HEADERS } from '../ingest/verify.js';
import { principalOf } from '../plugins/auth.js';
import { refuseNul } from '../security/text.js';

const SampleBody = refuseNul(InboundSampleIn);

function invalid(path: string, message: string): AppError {
  return new AppError('INVALID_REQUEST', `${path}: ${message}`, { details: [{ path, message }] });
}

/**
 * POST /v1/inbound-endpoints/{id}/samples: a sample event signed with the endpoint's stored HMAC
 * secret (unsigned when the endpoint verifies nothing and holds no secret of the provider's scheme),
 * ingested through the endpoint's own ingest URL (verification, idempotency and storage as
 * for any webhook), so that a developer can test without the provider and without ever holding the
 * secret. The secret and the signature stay on the server.
 */
export async function inboundSampleRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;

  app.post(
    '/inbound-endpoints/:id/samples',
    { schema: { params: IdParams, body: SampleBody, response: { 201: successEnvelope(InboundSampleOut) } } },
    async (request, reply) => {
      const { id } = request.params;
      const body = request.body;
      const provider = body.provider as SampleProvider;
      const row = await findInboundEndpoint(sql, principalOf(request).project_id, id);
      if (!row) throw endpointNotFound(id);
      if (!services.config.roles.has('ingest')) {
        throw new AppError('SERVICE_UNAVAILABLE', 'this server process does not ingest (HOOKRELAY_ROLES): send the sample to a process with the ingest role');
      }
      const wanted = SAMPLE_SIGNATURE[provider];
      const signatureHeader = (row.hmac_header_name ?? HMAC_PRESET_HEADERS[row.hmac_scheme].signature ?? '').toLowerCase();
      const signable = row.hmac_secret_encrypted !== null && row.hmac_scheme === wanted.scheme && signatureHeader === wanted.header;
      // An endpoint that verifies nothing takes any request: the sample goes unsigned unless the
      // endpoint holds a secret of the provider's scheme (the app behind it may check that one).
      const verifiesNothing = !row.verify_hmac && !row.verify_static_token && !row.verify_ip_allowlist;
      if (!verifiesNothing) {
        if (row.hmac_secret_encrypted === null) {
          throw invalid('body.provider', 'the endpoint has no HMAC secret to sign with: set hmac_secret on it, or sign the sample yourself (hookrelay trigger --secret)');
        }
        if (!signable) {
          throw invalid(
            'body.provider',
            `the endpoint verifies hmac_scheme ${row.hmac_scheme}${signatureHeader === '' ? '' : ` in ${signatureHeader}`}, but ${provider} signs with ${wanted.scheme} in ${wanted.header}`,
          );
        }
        // The server keeps neither a static token (only its hash) nor the provider's addresses.
        if (row.verify_static_token) throw invalid('body.provider', 'the endpoint also checks a static token, which the server keeps only as a hash: it cannot sign samples for it');
        if (row.verify_ip_allowlist) throw invalid('body.provider', "the endpoint also checks an IP allowlist, which a sample sent by the server itself cannot pass");
      }

      const ctx = randomSampleContext();
      let json;
      try {
        json = applySampleEdits(sampleBody(provider, body.event, ctx), body.set ?? []);
      } catch (error) {
        throw invalid('body.set', (error as Error).message);
      }
      const secret = signable && row.hmac_secret_encrypted !== null ? services.secretBox.decrypt(row.hmac_secret_encrypted) : null;
      const sample = sampleRequest(provider, body.event, json, secret, ctx);
      const token = services.secretBox.decrypt(row.secret_token_encrypted);
      const path = body.path ?? '/';
      const answer = await fastify.inject({
        method: 'POST',
        url: `/in/${token}${path === '/' ? '' : path}`,
        headers: Object.fromEntries(sample.headers),
        payload: sample.body,
      });
      if (answer.statusCode >= 300) {
        let code: unknown;
        let message = `the ingest answered ${answer.statusCode}`;
        try {
          const parsed = JSON.parse(answer.body) as { error?: { code?: unknown; message?: unknown } };
          code = parsed.error?.code;
          if (typeof parsed.error?.message === 'string') message = `the ingest refused the sample: ${parsed.error.message}`;
        } catch {
          // Not the envelope: the status says enough.
        }
        // 401 from the ingest is the endpoint's verification, not this request's API key.
        if (code === 'UNAUTHORIZED') throw invalid('body.provider', "the endpoint's verification refused the sample (check its hmac settings)");
        throw new AppError(isErrorCode(code) ? code : 'INTERNAL_ERROR', message);
      }
      reply.status(201);
      return {
        data: sampleOutcome(
          row.id,
          provider,
          body.event,
          path,
          sample,
          { status: answer.statusCode, duplicate: answer.headers[INGEST_DUPLICATE_HEADER] === 'true', text: answer.body },
          secret !== null,
        ),
        meta: { request_id: request.id },
      };
    },
  );
}
