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
  private readonly endpoints = new Map<string, string>();
  private readonly messages = new Map<string, SeenMessage>();
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

  /** Reads the owner's endpoints and newest messages; with `announce`, sends what changed since the last read. */
  private async read(announce: boolean): Promise<void> {
    if (this.reading || this.closed || this.socket.bufferedAmount > MAX_BUFFERED_BYTES) return;
    this.reading = true;
    try {
      const { project_id: projectId, owner_id: ownerId } = this.portal;
      const endpointRows = await listEndpoints(this.sql, projectId, { ownerId }, { limit: PORTAL_WATCH_LIMITS.endpoints });
      const messageRows = await listNewestMessagesOfEndpoints(this.sql, projectId, endpointRows.map((row) => row.id), PORTAL_WATCH_LIMITS.messagesPerEndpoint);
      const frames: PortalWatchFrame[] = [];
      const endpointIds = new Set<string>();
      for (const row of endpointRows) {
        endpointIds.add(row.id);
        const endpoint = toEndpointOut(row);
        const text = JSON.stringify(endpoint);
        if (this.endpoints.get(row.id) !== text) frames.push({ type: 'endpoint', endpoint });
        this.endpoints.set(row.id, text);
      }
      for (const id of this.endpoints.keys()) {
        if (endpointIds.has(id)) continue;
        this.endpoints.delete(id);
        frames.push({ type: 'endpoint_removed', endpoint_id: id });
      }
      const changed: { frame: PortalWatchFrame; messageId: string; endpointId: string; after: number }[] = [];
      const shown = new Set<string>();
      for (const row of messageRows) {
        shown.add(row.id);
        const message = toLogRecordOut(row);
        const text = JSON.stringify(message);
        const seen = this.messages.get(row.id);
        if (seen?.text === text) continue;
        changed.push({ frame: { type: 'message', endpoint_id: row.endpoint_id, message }, messageId: row.id, endpointId: row.endpoint_id, after: seen?.attempts ?? 0 });
        this.messages.set(row.id, { text, attempts: row.attempt_count });
      }
      // A message older than every endpoint's newest few is no longer followed.
      for (const id of this.messages.keys()) if (!shown.has(id)) this.messages.delete(id);
      if (!announce) return;
      const grown = changed.filter((c) => this.messages.get(c.messageId)!.attempts > c.after);
      const attempts = await listAttemptsAfter(this.sql, grown.map((c) => ({ messageId: c.messageId, attemptNumber: c.after })));
      const endpointOf = new Map(grown.map((c) => [c.messageId, c.endpointId]));
      for (const attempt of attempts) frames.push({ type: 'attempt', endpoint_id: endpointOf.get(attempt.message_id)!, attempt: toAttemptOut(attempt) });
      for (const c of changed) frames.push(c.frame);
      for (const frame of frames) this.send(frame);
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
