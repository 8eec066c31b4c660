import { createHash } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import {
  newUuidv7,
  REDACTED_HEADER_VALUE,
  REJECTION_BODY_PREFIX_BYTES,
  REJECTIONS_KEPT_PER_ENDPOINT,
  type RejectionEndpointKind,
  type RejectionReason,
} from '@hookrelay/shared';
import type { Database } from '../db/database.js';
import {
  addRejectionCounts,
  insertRejections,
  pruneRejections,
  type NewRejection,
  type RejectionTally,
} from '../db/rejections.js';
import { GroupCommit } from '../lib/group-commit.js';
import type { Metrics } from '../metrics/index.js';

/** A request refused at a live endpoint's ingest URL, as the ingest routes hand it over. */
export interface Refusal {
  endpointKind: RejectionEndpointKind;
  endpointId: string;
  projectId: string;
  reason: RejectionReason;
  detail: string;
  status: number;
  /** Whether the endpoint's `rejected_count` (refused by verification) counts it. */
  verification: boolean;
  receivedAt: Date;
  method: string;
  path: string;
  query: string;
  /** Header lines as received (Node's rawHeaders: name, value, name, value …). */
  rawHeaders: readonly string[];
  /** The body as read; undefined when it was not read (refused for its size). */
  body: Buffer | undefined;
  /** The size to report when the body was not read (its Content-Length, or what was read). */
  unreadSize?: number | undefined;
  /** A body that streamed to storage: `body` is its start, these are what the whole had. */
  whole?: { size: number; sha256: string } | undefined;
  sourceAddress: string;
  /** The endpoint's static token: its header (lowercase) and query parameter, redacted from what is kept. */
  secretHeader?: string | null;
  secretQueryParam?: string | null;
}

export interface RejectionRecorderOptions {
  /** Refusals recorded per second per endpoint, on average; beyond, they are only counted. */
  perSecond?: number;
  /** Refusals an endpoint may record at once after a quiet spell. */
  burst?: number;
  /** Refusals waiting for the writer, beyond which new ones are only counted. */
  maxQueued?: number;
  /** How long a refusal may wait for others to share its commit. */
  lingerMs?: number;
  /** How long counts may wait for a commit to carry them (a stored refusal's commit carries them at once). */
  countsEveryMs?: number;
  /** Most refused requests kept per endpoint. */
  keepPerEndpoint?: number;
  /** Told of each batch once it is committed (the streams send them). */
  onStored?: (rejections: readonly NewRejection[]) => void;
}

type Item = { kind: 'record'; rejection: NewRejection } | { kind: 'tally' };

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * A flood is counted in memory and written once a second: per refusal it would be a commit, and a
 * WAL flush that every other endpoint's webhooks would queue behind.
 */
const COUNTS_EVERY_MS = 1000;
/** A person reading refusals as they come does not notice a quarter of a second; the database sees a few commits a second. */
const LINGER_MS = 250;

/** Most endpoints whose token buckets are remembered; past it they all start full again. */
const MAX_BUCKETS = 10_000;

/** The query text with the value of `param` replaced, every other byte as received. */
export function redactQuery(query: string, param: string | null | undefined): string {
  if (!param || query === '') return query;
  return query
    .split('&')
    .map((part) => {
      const eq = part.indexOf('=');
      const rawName = eq === -1 ? part : part.slice(0, eq);
      let name: string;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        name = rawName;
      }
      return name === param ? `${rawName}=${REDACTED_HEADER_VALUE}` : part;
    })
    .join('&');
}

/** Header lines as [name, value] pairs, the value of `secretHeader` (lowercase name) replaced. */
export function redactHeaders(raw: readonly string[], secretHeader: string | null | undefined): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    pairs.push([name, secretHeader && name.toLowerCase() === secretHeader ? REDACTED_HEADER_VALUE : raw[i + 1]!]);
  }
  return pairs;
}

/**
 * Keeps refused requests for their endpoint's owner (docs/api.md, Refused requests), off the request
 * path: `refuse` only takes a token from the endpoint's bucket and queues; a group commit of its own
 * (never the ingest writers') stores batches, removes each endpoint's oldest beyond the cap, and adds
 * the counts. A refusal over the endpoint's rate or behind a full queue is only counted, so a flood
 * at one endpoint costs the others neither connections nor commits.
 */
export class RejectionRecorder {
  private readonly writer: GroupCommit<Item, void>;
  private readonly buckets = new Map<string, Bucket>();
  private readonly tallies = new Map<string, RejectionTally>();
  private queued = 0;
  private countsTimer: NodeJS.Timeout | null = null;
  private readonly countsEveryMs: number;
  private readonly perMs: number;
  private readonly burst: number;
  private readonly maxQueued: number;
  private readonly keep: number;

  constructor(
    private readonly db: Database,
    private readonly metrics: Metrics,
    private readonly log: FastifyBaseLogger,
    private readonly options: RejectionRecorderOptions = {},
  ) {
    this.perMs = (options.perSecond ?? 10) / 1000;
    this.burst = options.burst ?? 20;
    this.maxQueued = options.maxQueued ?? 2000;
    this.keep = options.keepPerEndpoint ?? REJECTIONS_KEPT_PER_ENDPOINT;
    this.countsEveryMs = options.countsEveryMs ?? COUNTS_EVERY_MS;
    this.writer = new GroupCommit<Item, void>({
      commit: (items) => this.commit(items),
      maxBatch: 200,
      // Each kept body is at most 64 KiB: a batch stays within a few MiB.
      sizeOf: (item) => (item.kind === 'record' ? item.rejection.bodyPrefix.length : 0),
      maxBatchSize: 4 * 1024 * 1024,
      lingerMs: options.lingerMs ?? LINGER_MS,
    });
  }

  /** Records (or only counts) a refused request, and says whether it is recorded; never throws, never waits. */
  refuse(refusal: Refusal): boolean {
    const record = this.takeToken(refusal.endpointId, refusal.receivedAt.getTime()) && this.queued < this.maxQueued;
    this.count(refusal, record ? 0 : 1);
    if (!record) {
      this.metrics.countRejections('dropped');
      return false;
    }
    this.queued++;
    const rejection = this.toRejection(refusal);
    this.writer.enqueue({ kind: 'record', rejection }, true).then(
      () => {
        this.queued--;
        this.metrics.countRejections('recorded');
      },
      (error: unknown) => {
        this.queued--;
        this.metrics.countRejections('dropped');
        this.log.warn({ err: error, inbound_endpoint_id: rejection.endpointId }, 'a refused request could not be recorded');
      },
    );
    return true;
  }

  /** Resolves once everything queued and counted so far is written (graceful stop, tests). */
  idle(): Promise<void> {
    if (this.tallies.size > 0) this.writeCounts();
    return this.writer.idle();
  }

  /** Counts go with the next commit, or on their own within `countsEveryMs`. */
  private scheduleCounts(): void {
    if (this.countsTimer !== null) return;
    this.countsTimer = setTimeout(() => this.writeCounts(), this.countsEveryMs);
    this.countsTimer.unref();
  }

  private writeCounts(): void {
    if (this.countsTimer !== null) clearTimeout(this.countsTimer);
    this.countsTimer = null;
    // Nobody waits on the counts; a failed write puts them back (restoreTally) for a later one.
    this.writer.enqueue({ kind: 'tally' }, true).catch((error: unknown) => {
      this.log.warn({ err: error }, 'refused-request counts could not be written');
    });
  }

  private takeToken(endpointId: string, now: number): boolean {
    let bucket = this.buckets.get(endpointId);
    if (bucket === undefined) {
      if (this.buckets.size >= MAX_BUCKETS) this.buckets.clear();
      bucket = { tokens: this.burst, at: now };
      this.buckets.set(endpointId, bucket);
    } else {
      bucket.tokens = Math.min(this.burst, bucket.tokens + Math.max(0, now - bucket.at) * this.perMs);
      bucket.at = now;
    }
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  /** Adds the refusal to its endpoint's counts, which the next commit writes. */
  private count(refusal: Refusal, dropped: number): void {
    if (!refusal.verification && dropped === 0) return;
    let tally = this.tallies.get(refusal.endpointId);
    if (tally === undefined) {
      tally = { endpointKind: refusal.endpointKind, endpointId: refusal.endpointId, refusedByVerification: 0, dropped: 0 };
      this.tallies.set(refusal.endpointId, tally);
      this.scheduleCounts();
    }
    if (refusal.verification) tally.refusedByVerification++;
    tally.dropped += dropped;
  }

  private toRejection(refusal: Refusal): NewRejection {
    const body = refusal.body;
    const prefix = body === undefined ? Buffer.alloc(0) : Buffer.from(body.subarray(0, REJECTION_BODY_PREFIX_BYTES));
    return {
      id: newUuidv7(),
      projectId: refusal.projectId,
      endpointKind: refusal.endpointKind,
      endpointId: refusal.endpointId,
      receivedAt: refusal.receivedAt,
      reason: refusal.reason,
      detail: refusal.detail,
      status: refusal.status,
      method: refusal.method,
      path: refusal.path,
      query: redactQuery(refusal.query, refusal.secretQueryParam),
      rawHeaders: redactHeaders(refusal.rawHeaders, refusal.secretHeader),
      sizeBytes: refusal.whole?.size ?? (body === undefined ? (refusal.unreadSize ?? 0) : body.length),
      bodySha256: refusal.whole?.sha256 ?? (body === undefined ? null : createHash('sha256').update(body).digest('hex')),
      bodyPrefix: prefix,
      bodyTruncated: refusal.whole !== undefined ? refusal.whole.size > prefix.length : body === undefined ? (refusal.unreadSize ?? 0) > 0 : body.length > prefix.length,
      sourceAddress: refusal.sourceAddress,
    };
  }

  private async commit(items: Item[]): Promise<void[]> {
    const rejections: NewRejection[] = [];
    for (const item of items) if (item.kind === 'record') rejections.push(item.rejection);
    const tallies = [...this.tallies.values()];
    this.tallies.clear();
    if (this.countsTimer !== null) clearTimeout(this.countsTimer);
    this.countsTimer = null;
    if (rejections.length === 0 && tallies.length === 0) return items.map(() => undefined);
    try {
      // One transaction, one WAL flush, whatever the batch holds.
      await this.db.sql.begin(async (sql) => {
        await insertRejections(sql, rejections);
        await pruneRejections(sql, [...new Set(rejections.map((r) => r.endpointId))], this.keep);
        await addRejectionCounts(sql, 'inbound', tallies.filter((t) => t.endpointKind === 'inbound'));
        await addRejectionCounts(sql, 'pull', tallies.filter((t) => t.endpointKind === 'pull'));
      });
    } catch (error) {
      // The counts go back for the next commit; the records of this batch are lost (the caller logs them).
      for (const tally of tallies) this.restoreTally(tally);
      throw error;
    }
    if (rejections.length > 0) {
      try {
        this.options.onStored?.(rejections);
      } catch (error) {
        this.log.warn({ err: error }, 'refused requests were stored but not announced');
      }
    }
    return items.map(() => undefined);
  }

  private restoreTally(tally: RejectionTally): void {
    const current = this.tallies.get(tally.endpointId);
    if (current === undefined) {
      this.tallies.set(tally.endpointId, tally);
      // Written again a little later, so that an unreachable database is not asked in a tight loop.
      this.scheduleCounts();
    } else {
      current.refusedByVerification += tally.refusedByVerification;
      current.dropped += tally.dropped;
    }
  }
}
