import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import { KEY_REVOKED_CLOSE } from '@hookrelay/shared';
import { findActiveApiKeyIds, type ApiKeyPrincipal } from '../db/api-keys.js';
import { API_KEY_REVOKED_CHANNEL } from '../db/channels.js';
import type { Database } from '../db/database.js';
import { AppError } from '../errors.js';
import type { SocketLimitName } from '../metrics/index.js';

/** Open WebSockets one process allows; 0 = no limit. */
export interface SocketLimits {
  perKey: number;
  perProject: number;
  total: number;
}

/**
 * How often the keys of the open sockets are read again. The revocation NOTIFY closes sockets at
 * once; this read is what bounds how long they outlive their key when the NOTIFY never arrives (a
 * process that was away from the database then, a key removed by hand). Kept well under 5 s.
 */
export const KEY_RECHECK_MS = 2_000;

/**
 * Retry-After of a refused upgrade: a socket slot frees when someone stops a listener or closes a
 * page, which is a matter of seconds, not milliseconds.
 */
export const SOCKET_LIMIT_RETRY_AFTER_SECONDS = 10;

/** How long a socket closed for its revoked key may take over the close handshake before it is cut. */
const REVOKED_CLOSE_GRACE_MS = 2_000;

/**
 * One open (or opening) WebSocket's place in the counts. It is taken before the upgrade and given
 * back when the TCP connection closes, whichever way that happens: a refused or failed upgrade, a
 * close by either side, a dropped peer.
 */
export class SocketSlot {
  private socket: WebSocket | undefined;
  private onRevoked: (() => void) | undefined;
  revoked = false;
  released = false;

  constructor(
    readonly apiKeyId: string,
    readonly projectId: string,
  ) {}

  /**
   * The upgraded socket, and what its route stops when the key is revoked (so that nothing more is
   * sent while the close handshake runs). A slot revoked during the upgrade closes it at once.
   */
  attach(socket: WebSocket, onRevoked: () => void): void {
    this.socket = socket;
    this.onRevoked = onRevoked;
    if (this.revoked) this.closeRevoked();
  }

  revoke(): void {
    if (this.revoked) return;
    this.revoked = true;
    if (this.socket !== undefined) this.closeRevoked();
  }

  private closeRevoked(): void {
    const socket = this.socket!;
    this.onRevoked?.();
    socket.close(KEY_REVOKED_CLOSE.code, KEY_REVOKED_CLOSE.reason);
    // A peer that never answers the close does not keep its descriptor for ws's 30 s.
    setTimeout(() => socket.terminate(), REVOKED_CLOSE_GRACE_MS).unref();
  }
}

/**
 * This process's WebSockets of the /v1 API, by API key and project: it refuses an upgrade over a
 * limit, and closes every socket of a key once the key is revoked (told by NOTIFY from whichever
 * process revoked it, and found by a read of the keys every KEY_RECHECK_MS in case a NOTIFY was missed).
 * The limits hold per process: N processes behind a balancer allow N times as many.
 */
export class SocketRegistry {
  private readonly byKey = new Map<string, Set<SocketSlot>>();
  private readonly byProject = new Map<string, number>();
  private total = 0;
  private unlisten: (() => Promise<void>) | undefined;
  private recheckTimer: NodeJS.Timeout | undefined;
  private checking = false;
  private failing = false;

  constructor(
    private readonly db: Database,
    private readonly limits: SocketLimits,
    private readonly log: FastifyBaseLogger,
    private readonly onRefused: (limit: SocketLimitName) => void = () => {},
    private readonly recheckMs = KEY_RECHECK_MS,
  ) {}

  async start(): Promise<void> {
    this.recheckTimer = setInterval(() => void this.recheck(), this.recheckMs);
    this.recheckTimer.unref();
    this.unlisten = await this.db.listen(
      API_KEY_REVOKED_CHANNEL,
      (apiKeyId) => this.revokeKey(apiKeyId),
      // Revocations announced while the listening connection was down are found by reading.
      () => void this.recheck(),
    );
  }

  async stop(): Promise<void> {
    clearInterval(this.recheckTimer);
    await this.unlisten?.().catch(() => {});
    this.unlisten = undefined;
  }

  /** Sockets open (or opening) in this process. */
  get openCount(): number {
    return this.total;
  }

  /**
   * Takes a slot for a WebSocket of `principal` on `connection` (the upgrade's TCP connection), or
   * throws RATE_LIMITED when a limit is reached. Call it last before the upgrade: the slot is given
   * back only when the connection closes.
   */
  reserve(principal: ApiKeyPrincipal, connection: Socket): SocketSlot {
    const refused = this.refusal(principal);
    if (refused !== undefined) {
      this.onRefused(refused.limit);
      throw new AppError('RATE_LIMITED', refused.message, { retryAfterSeconds: SOCKET_LIMIT_RETRY_AFTER_SECONDS });
    }
    const slot = new SocketSlot(principal.api_key_id, principal.project_id);
    if (connection.destroyed) {
      // The client left during the checks: the upgrade will not happen and 'close' may have fired already.
      slot.released = true;
      return slot;
    }
    const slots = this.byKey.get(slot.apiKeyId) ?? new Set();
    slots.add(slot);
    this.byKey.set(slot.apiKeyId, slots);
    this.byProject.set(slot.projectId, (this.byProject.get(slot.projectId) ?? 0) + 1);
    this.total += 1;
    connection.once('close', () => this.release(slot));
    return slot;
  }

  private refusal(principal: ApiKeyPrincipal): { limit: SocketLimitName; message: string } | undefined {
    const { perKey, perProject, total } = this.limits;
    const retry = `retry in ${SOCKET_LIMIT_RETRY_AFTER_SECONDS} s`;
    if (perKey > 0 && (this.byKey.get(principal.api_key_id)?.size ?? 0) >= perKey) {
      return { limit: 'key', message: `too many open WebSockets for this API key (limit ${perKey} per server process): close a stream or watch page of the key, or ${retry}` };
    }
    if (perProject > 0 && (this.byProject.get(principal.project_id) ?? 0) >= perProject) {
      return { limit: 'project', message: `too many open WebSockets for this project (limit ${perProject} per server process): close a stream or watch page of the project, or ${retry}` };
    }
    if (total > 0 && this.total >= total) {
      return { limit: 'process', message: `this server process has too many open WebSockets (limit ${total}): ${retry}` };
    }
    return undefined;
  }

  private release(slot: SocketSlot): void {
    if (slot.released) return;
    slot.released = true;
    const slots = this.byKey.get(slot.apiKeyId);
    slots?.delete(slot);
    if (slots?.size === 0) this.byKey.delete(slot.apiKeyId);
    const inProject = (this.byProject.get(slot.projectId) ?? 1) - 1;
    if (inProject <= 0) this.byProject.delete(slot.projectId);
    else this.byProject.set(slot.projectId, inProject);
    this.total -= 1;
  }

  /** Closes every socket of the key in this process (code KEY_REVOKED_CLOSE). */
  revokeKey(apiKeyId: string): void {
    const slots = this.byKey.get(apiKeyId);
    if (slots === undefined) return;
    for (const slot of slots) slot.revoke();
  }

  /** Reads whether the keys of the open sockets still authenticate, and closes the sockets of those that do not. */
  async recheck(): Promise<void> {
    if (this.checking || this.byKey.size === 0) return;
    this.checking = true;
    try {
      const ids = [...this.byKey.keys()];
      const active = await findActiveApiKeyIds(this.db.sql, ids);
      this.failing = false;
      for (const id of ids) if (!active.has(id)) this.revokeKey(id);
    } catch (error) {
      // During a database outage every read fails: one warning per run of failures.
      if (!this.failing) this.log.warn({ err: error }, 'could not check the API keys of open WebSockets; retrying');
      this.failing = true;
    } finally {
      this.checking = false;
    }
  }
}
