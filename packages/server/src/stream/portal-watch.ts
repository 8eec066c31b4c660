import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import { PORTAL_WATCH_LIMITS, type PortalWatchFrame } from '@hookrelay/shared';
import type { Sql } from '../db/database.js';
import { listEndpoints } from '../db/endpoints.js';
import type { PortalLinkPrincipal } from '../db/portal-links.js';
import { listAttemptsAfter, listNewestMessagesOfEndpoints } from '../db/portal-activity.js';
import { toAttemptOut } from '../views/attempt.js';
import { toEndpointOut } from '../views/endpoint.js';
import { toLogRecordOut } from '../views/message.js';
import { portalWatchFrameText } from './frames.js';

/** Above this much unsent data a portal socket skips its reads until the page has caught up. */
const MAX_BUFFERED_BYTES = 1024 * 1024;

interface SeenMessage {
  text: string;
  attempts: number;
}

/**
 * One portal page's live socket: it follows the owner's endpoints (PORTAL_WATCH_LIMITS) and their
 * newest messages by reading them again every `intervalMs` and sending what changed since the last
 * read. Reading rather than hearing NOTIFYs keeps it to what the owner may see whichever process
 * delivered, with no notice to route by owner; what it reads is bounded by the limits, not by how
 * many messages the owner has. Nothing is sent until the first read is held (`ready` then says so).
 */
export class PortalWatcher {
  /** What the last read saw: each endpoint's and each followed message's answer, as sent. */
  private endpoints = new Map<string, string>();
  private messages = new Map<string, SeenMessage>();
  private timer: NodeJS.Timeout | undefined;
  private reading = false;
  private failing = false;
  private closed = false;

  constructor(
    private readonly socket: WebSocket,
    private readonly sql: Sql,
    private readonly portal: PortalLinkPrincipal,
    private readonly log: FastifyBaseLogger,
    private readonly intervalMs: number = PORTAL_WATCH_LIMITS.intervalMs,
  ) {}

  start(): void {
    void this.read(false).then(() => {
      if (this.closed) return;
      this.send({ type: 'ready' });
      this.timer = setInterval(() => void this.read(true), this.intervalMs);
      this.timer.unref();
    });
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
  }

  private send(frame: PortalWatchFrame): void {
    if (!this.closed) this.socket.send(portalWatchFrameText(frame));
  }

  /**
   * Reads the owner's endpoints and newest messages; with `announce`, sends what changed since the
   * last read. What it saw is kept only once the read has gone through, so a read that fails
   * halfway announces its changes at the next one.
   */
  private async read(announce: boolean): Promise<void> {
    if (this.reading || this.closed || this.socket.bufferedAmount > MAX_BUFFERED_BYTES) return;
    this.reading = true;
    try {
      const { project_id: projectId, owner_id: ownerId } = this.portal;
      const endpointRows = await listEndpoints(this.sql, projectId, { ownerId }, { limit: PORTAL_WATCH_LIMITS.endpoints });
      const messageRows = await listNewestMessagesOfEndpoints(this.sql, projectId, endpointRows.map((row) => row.id), PORTAL_WATCH_LIMITS.messagesPerEndpoint);
      const frames: PortalWatchFrame[] = [];
      const endpoints = new Map<string, string>();
      for (const row of endpointRows) {
        const endpoint = toEndpointOut(row);
        const text = JSON.stringify(endpoint);
        if (this.endpoints.get(row.id) !== text) frames.push({ type: 'endpoint', endpoint });
        endpoints.set(row.id, text);
      }
      for (const id of this.endpoints.keys()) if (!endpoints.has(id)) frames.push({ type: 'endpoint_removed', endpoint_id: id });
      // A message older than every endpoint's newest few is no longer followed.
      const messages = new Map<string, SeenMessage>();
      const changed: { frame: PortalWatchFrame; messageId: string; endpointId: string; after: number; attempts: number }[] = [];
      for (const row of messageRows) {
        const message = toLogRecordOut(row);
        const text = JSON.stringify(message);
        const seen = this.messages.get(row.id);
        messages.set(row.id, { text, attempts: row.attempt_count });
        if (seen?.text === text) continue;
        changed.push({ frame: { type: 'message', endpoint_id: row.endpoint_id, message }, messageId: row.id, endpointId: row.endpoint_id, after: seen?.attempts ?? 0, attempts: row.attempt_count });
      }
      if (announce) {
        const grown = changed.filter((c) => c.attempts > c.after);
        const attempts = await listAttemptsAfter(this.sql, grown.map((c) => ({ messageId: c.messageId, attemptNumber: c.after })));
        const byMessage = new Map(grown.map((c) => [c.messageId, c]));
        for (const attempt of attempts) {
          const c = byMessage.get(attempt.message_id)!;
          // One recorded after the message was read is announced with its message, at the next read.
          if (attempt.attempt_number <= c.attempts) frames.push({ type: 'attempt', endpoint_id: c.endpointId, attempt: toAttemptOut(attempt) });
        }
        for (const c of changed) frames.push(c.frame);
        for (const frame of frames) this.send(frame);
      }
      this.endpoints = endpoints;
      this.messages = messages;
      this.failing = false;
    } catch (error) {
      // During a database outage every read fails: one warning per run of failures.
      if (!this.failing) this.log.warn({ err: error }, 'portal watch read failed; retrying');
      this.failing = true;
    } finally {
      this.reading = false;
    }
  }
}
