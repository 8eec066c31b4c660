import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { generateSigningSecret } from '@hookrelay/shared';
import type { Sql } from '../../src/db/database.js';
import type { ClaimedJob, InboundDeliveryContext, OutboundDeliveryContext } from '../../src/db/deliveries.js';
import { fetchPayloads, PAYLOAD_UNAVAILABLE_DELAY_MS, splitByPayload, triage, type ClaimContexts, type DeliveryContext } from '../../src/delivery/claim.js';
import { preparedFromClaim, preparedFromHandoff, type RequestContext } from '../../src/delivery/prepared.js';
import { SecretCache } from '../../src/delivery/secret-cache.js';
import { SecretBox } from '../../src/security/crypto.js';
import { PayloadUnavailableError, type PayloadStore } from '../../src/storage/payload-store.js';

/** The claim's steps that decide without the database, on contexts as the claim loads them. */

let next = 0;
const id = () => `0190b2c4-7d2e-7a51-9c3f-${String(++next).padStart(12, '0')}`;

function outbound(overrides: Partial<OutboundDeliveryContext> = {}): OutboundDeliveryContext {
  const messageId = id();
  return {
    id: messageId,
    status: 'queued',
    attempt_count: 0,
    content_type: 'application/json',
    payload_key: `outbound/${messageId}`,
    event_type: null,
    deleted: false,
    endpoint_id: 'ep_0123456789abcdef0123456789abcdef',
    url: 'https://receiver.example/hooks',
    headers: {},
    paused: false,
    rate_limit_rps: 0,
    live: true,
    secrets: [],
    ...overrides,
  };
}

function inbound(overrides: Partial<InboundDeliveryContext> = {}): InboundDeliveryContext {
  const messageId = id();
  return {
    id: messageId,
    status: 'queued',
    attempt_count: 0,
    content_type: 'application/json',
    payload_key: `inbound/${messageId}`,
    method: 'POST',
    path: '/',
    query: '',
    raw_headers: [['content-type', 'application/json']],
    deleted: false,
    endpoint_id: id(),
    url: 'https://app.example/in',
    mode: 'forward',
    signing_enabled: false,
    verified: [],
    hmac_scheme: 'hex',
    hmac_header_name: null,
    timestamp_header_name: null,
    hmac_secret_encrypted: null,
    resign_late: true,
    size_bytes: 2,
    live: true,
    secrets: [],
    trace_context: null,
    ...overrides,
  };
}

const isOut = (c: DeliveryContext): c is OutboundDeliveryContext => 'rate_limit_rps' in c;

/** The jobs of these contexts, and the contexts as loadContexts gives them. */
function claimOf(contexts: DeliveryContext[], missing: ClaimedJob[] = []): { jobs: ClaimedJob[]; contexts: ClaimContexts } {
  const jobs: ClaimedJob[] = [
    ...contexts.map((c): ClaimedJob => ({ message_id: c.id, kind: isOut(c) ? 'outbound' : 'inbound', destination: c.endpoint_id, attempt_base: 0 })),
    ...missing,
  ];
  const byId = new Map(jobs.map((j) => [j.message_id, j]));
  return { jobs, contexts: { all: contexts, jobOf: (c) => byId.get(c.id)!, kindOf: (c) => byId.get(c.id)!.kind } };
}

describe('triage', () => {
  it('sends each claimed job to its one place: dropped, gone by kind, back to the CLI, paused or ready', () => {
    const ready = [outbound(), inbound()];
    const deleted = outbound({ deleted: true });
    // A deleted message of a gone endpoint is dropped: nothing is left to fail.
    const deletedOfGone = inbound({ deleted: true, live: false });
    const goneOut = outbound({ live: false });
    const goneIn = inbound({ live: false, mode: 'cli' });
    const cli = inbound({ mode: 'cli' });
    const paused = outbound({ paused: true });
    const vanished: ClaimedJob = { message_id: id(), kind: 'outbound', destination: 'x', attempt_base: 0 };
    const { jobs, contexts } = claimOf([...ready, deleted, deletedOfGone, goneOut, goneIn, cli, paused], [vanished]);
    expect(triage(jobs, contexts)).toEqual({
      drop: [vanished.message_id, deleted.id, deletedOfGone.id],
      gone: { outbound: [goneOut.id], inbound: [goneIn.id] },
      toCli: [cli.id],
      paused: [paused],
      ready,
    });
  });
});

describe('splitByPayload', () => {
  it('keeps the deliveries whose payload is at hand; the others, by kind, have lost it', () => {
    const held = outbound();
    const streamed = inbound({ payload_key: 'blob/0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70' });
    const lostOut = outbound();
    const lostIn = inbound();
    const noKey = inbound({ payload_key: null });
    const { contexts } = claimOf([held, streamed, lostOut, lostIn, noKey]);
    const payloads = new Map<string, Buffer | { key: string; size: number }>([
      [held.payload_key!, Buffer.from('{}')],
      [streamed.payload_key!, { key: streamed.payload_key!, size: 2 }],
    ]);
    expect(splitByPayload(contexts.all, payloads, contexts)).toEqual({
      deliverable: [held, streamed],
      noPayload: { outbound: [lostOut.id], inbound: [lostIn.id, noKey.id] },
    });
  });
});

/** A payload store that answers `getMany` as told and counts the keys it was asked for. */
function store(getMany: (keys: readonly string[]) => Promise<Map<string, Buffer>>, kind = 's3') {
  const asked: string[][] = [];
  const payloadStore = {
    kind,
    getMany: async (_sql: Sql, keys: readonly string[]) => {
      asked.push([...keys]);
      return getMany(keys);
    },
  } as unknown as PayloadStore;
  return { payloadStore, asked };
}

function logLines() {
  const warnings: string[] = [];
  const log = { warn: (_obj: unknown, message: string) => warnings.push(message) } as unknown as FastifyBaseLogger;
  return { log, warnings };
}

const noSql = {} as Sql;

describe('fetchPayloads', () => {
  it('reads the store for held payloads only: a streamed body is named by its key and size, an inline one taken from its context', async () => {
    const fromStore = outbound();
    const streamed = inbound({ payload_key: 'blob/0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71', size_bytes: 5_000_000 });
    const { payloadStore, asked } = store(async (keys) => new Map(keys.map((k) => [k, Buffer.from(k)])));
    const { log } = logLines();
    const result = await fetchPayloads({ payloadStore, log }, noSql, [fromStore, streamed], false);
    expect(asked).toEqual([[fromStore.payload_key]]);
    expect(result.postponed).toEqual([]);
    expect(result.payloads.get(fromStore.payload_key!)).toEqual(Buffer.from(fromStore.payload_key!));
    expect(result.payloads.get(streamed.payload_key!)).toEqual({ key: streamed.payload_key, size: 5_000_000 });

    const inline = outbound({ payload: new Uint8Array([123, 125]) });
    const gone = outbound({ payload: null });
    const again = await fetchPayloads({ payloadStore, log }, noSql, [inline, gone], true);
    expect(asked).toHaveLength(1);
    expect([...again.payloads]).toEqual([[inline.payload_key, Buffer.from('{}')]]);
  });

  it('postpones every delivery when the store is unavailable, with one warning and no payload', async () => {
    const ready = [outbound(), inbound()];
    const { payloadStore } = store(async () => {
      throw new PayloadUnavailableError('bucket unreachable');
    });
    const { log, warnings } = logLines();
    expect(await fetchPayloads({ payloadStore, log }, noSql, ready, false)).toEqual({
      payloads: new Map(),
      postponed: ready.map((c) => ({ messageId: c.id, delayMs: PAYLOAD_UNAVAILABLE_DELAY_MS })),
    });
    expect(warnings).toEqual(['delivery worker: payload store unavailable; deliveries postponed']);
  });

  it('lets any other failure of the store fail the claim', async () => {
    const { payloadStore } = store(async () => {
      throw new Error('bug');
    });
    await expect(fetchPayloads({ payloadStore, ...logLines() }, noSql, [outbound()], false)).rejects.toThrow('bug');
  });
});

describe('a prepared delivery', () => {
  const box = new SecretBox(randomBytes(32));
  const signing = generateSigningSecret();
  const ctx: RequestContext = { secrets: new SecretCache(box), payloadStore: {} as PayloadStore, sql: noSql, resignAfterSeconds: 240 };

  it('of a claim counts its attempt within the delivery from the job and signs with the opened secret when sent', async () => {
    const c = outbound({ attempt_count: 4, status: 'pending_retry', secrets: [box.encrypt(signing)] });
    const body = Buffer.from('{"a":1}');
    const p = preparedFromClaim(ctx, 'lease', {
      context: c,
      job: { message_id: c.id, kind: 'outbound', destination: c.endpoint_id, attempt_base: 3 },
      payload: body,
      notBefore: 1234,
    });
    expect(p).toMatchObject({ kind: 'outbound', messageId: c.id, leaseId: 'lease', previousStatus: 'pending_retry', attemptNumber: 5, attemptInDelivery: 2, notBefore: 1234, bytes: 7, blobKey: null, traceContext: null });
    const timestamp = Math.floor(Date.now() / 1000);
    const request = await p.build(timestamp);
    const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]));
    expect(new Webhook(signing).verify(body.toString(), headers)).toEqual({ a: 1 });
  });

  it('of a streamed forward-mode body counts the body by its size and names the blob', () => {
    const c = inbound({ trace_context: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
    const p = preparedFromClaim(ctx, 'lease', {
      context: c,
      job: { message_id: c.id, kind: 'inbound', destination: c.endpoint_id, attempt_base: 0 },
      payload: { key: 'blob/x', size: 3_000_000 },
      notBefore: 0,
    });
    expect(p).toMatchObject({ kind: 'inbound', attemptNumber: 1, attemptInDelivery: 1, bytes: 3_000_000, blobKey: 'blob/x', traceContext: c.trace_context });
  });

  it('handed over by the enqueue is a first attempt of a queued message, due at once', () => {
    const p = preparedFromHandoff(ctx, { workerId: 'w', leaseId: 'l', leaseSeconds: 30, slots: 1 }, {
      messageId: 'm', url: 'https://receiver.example/', headers: {}, contentType: 'text/plain', eventType: null, secrets: [], body: Buffer.from('hi'),
    });
    expect(p).toMatchObject({ kind: 'outbound', messageId: 'm', leaseId: 'l', previousStatus: 'queued', attemptNumber: 1, attemptInDelivery: 1, notBefore: 0, bytes: 2, blobKey: null });
  });
});

describe('SecretCache', () => {
  it('opens each sealed secret once, and past its size forgets the oldest', () => {
    const box = new SecretBox(randomBytes(32));
    let opened = 0;
    const counting = { decrypt: (sealed: string) => (opened++, box.decrypt(sealed)) } as unknown as SecretBox;
    const cache = new SecretCache(counting, 2);
    const [a, b, c] = ['a', 'b', 'c'].map((plain) => box.encrypt(plain)) as [string, string, string];
    expect([cache.open(a), cache.open(a), cache.open(b)]).toEqual(['a', 'a', 'b']);
    expect(opened).toBe(2);
    expect(cache.open(c)).toBe('c');
    expect(cache.open(b)).toBe('b');
    expect(opened).toBe(3);
    expect(cache.open(a)).toBe('a');
    expect(opened).toBe(4);
  });
});
