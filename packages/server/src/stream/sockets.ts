import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import { KEY_REVOKED_CLOSE, PORTAL_LINK_ENDED_CLOSE } from '@hookrelay/shared';
import { findActiveApiKeyIds, type ApiKeyPrincipal } from '../db/api-keys.js';
import { API_KEY_REVOKED_CHANNEL, PORTAL_LINK_REVOKED_CHANNEL } from '../db/channels.js';
import type { Database } from '../db/database.js';
import { findActivePortalLinkIds, type PortalLinkPrincipal } from '../db/portal-links.js';
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

/** A portal link's key in the registry's map, apart from the API keys' ids. */
const PORTAL_PREFIX = 'portal:';

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

  /** `holder`: the API key's id, or PORTAL_PREFIX and the portal link's id. */
  constructor(
    readonly holder: string,
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
    const close = this.holder.startsWith(PORTAL_PREFIX) ? PORTAL_LINK_ENDED_CLOSE : KEY_REVOKED_CLOSE;
    socket.close(close.code, close.reason);
    // A peer that never answers the close does not keep its descriptor for ws's 30 s.
    setTimeout(() => socket.terminate(), REVOKED_CLOSE_GRACE_MS).unref();
  }
}

/**
 * This process's WebSockets of the /v1 API, by API key (or portal link) and project: it refuses an
 * upgrade over a limit, and closes every socket of a key or link once it is revoked (told by NOTIFY
 * from whichever process revoked it, and found by a read of the keys and links every
 * KEY_RECHECK_MS in case a NOTIFY was missed, which is also how a link's expiry is found). A
 * portal link's sockets count as a key's do. The limits hold per process: N processes behind a
 * balancer allow N times as many.
 */
export class SocketRegistry {
  private readonly byKey = new Map<string, Set<SocketSlot>>();
  private readonly byProject = new Map<string, number>();
  private total = 0;
  private unlisten: (() => Promise<void>)[] = [];
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
    // Revocations announced while the listening connection was down are found by reading.
    this.unlisten.push(await this.db.listen(API_KEY_REVOKED_CHANNEL, (apiKeyId) => this.revokeKey(apiKeyId), () => void this.recheck()));
    this.unlisten.push(await this.db.listen(PORTAL_LINK_REVOKED_CHANNEL, (linkId) => this.revokeKey(PORTAL_PREFIX + linkId), () => void this.recheck()));
  }

  async stop(): Promise<void> {
    clearInterval(this.recheckTimer);
    for (const unlisten of this.unlisten) await unlisten().catch(() => {});
    this.unlisten = [];
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
    return this.take(principal.api_key_id, principal.project_id, 'API key', connection);
  }

  /**
   * A slot for a portal link's socket, as `reserve`; it is also closed when the link expires
   * (`expires_at`, and the periodic check in case this process's timer is late).
   */
  reservePortal(portal: PortalLinkPrincipal, connection: Socket): SocketSlot {
    const slot = this.take(PORTAL_PREFIX + portal.link_id, portal.project_id, 'portal link', connection);
    if (!slot.released) {
      const timer = setTimeout(() => slot.revoke(), Math.max(0, portal.expires_at.getTime() - Date.now()));
      timer.unref();
      connection.once('close', () => clearTimeout(timer));
    }
    return slot;
  }

  private take(holder: string, projectId: string, holderName: string, connection: Socket): SocketSlot {
    const refused = this.refusal(holder, projectId, holderName);
    if (refused !== undefined) {
      this.onRefused(refused.limit);
      throw new AppError('RATE_LIMITED', refused.message, { retryAfterSeconds: SOCKET_LIMIT_RETRY_AFTER_SECONDS });
    }
    const slot = new SocketSlot(holder, projectId);
    if (connection.destroyed) {
      // The client left during the checks: the upgrade will not happen and 'close' may have fired already.
      slot.released = true;
      return slot;
    }
    const slots = this.byKey.get(slot.holder) ?? new Set();
    slots.add(slot);
    this.byKey.set(slot.holder, slots);
    this.byProject.set(slot.projectId, (this.byProject.get(slot.projectId) ?? 0) + 1);
    this.total += 1;
    connection.once('close', () => this.release(slot));
    return slot;
  }

  private refusal(holder: string, projectId: string, holderName: string): { limit: SocketLimitName; message: string } | undefined {
    const { perKey, perProject, total } = this.limits;
    const retry = `retry in ${SOCKET_LIMIT_RETRY_AFTER_SECONDS} s`;
    if (perKey > 0 && (this.byKey.get(holder)?.size ?? 0) >= perKey) {
      const close = holderName === 'API key' ? 'a stream or watch page of the key' : 'a page of the link';
      return { limit: 'key', message: `too many open WebSockets for this ${holderName} (limit ${perKey} per server process): close ${close}, or ${retry}` };
    }
    if (perProject > 0 && (this.byProject.get(projectId) ?? 0) >= perProject) {
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
    const slots = this.byKey.get(slot.holder);
    slots?.delete(slot);
    if (slots?.size === 0) this.byKey.delete(slot.holder);
    const inProject = (this.byProject.get(slot.projectId) ?? 1) - 1;
    if (inProject <= 0) this.byProject.delete(slot.projectId);
    else this.byProject.set(slot.projectId, inProject);
    this.total -= 1;
  }

  /** Closes every socket of the key (or PORTAL_PREFIX and a link's id) in this process (code KEY_REVOKED_CLOSE). */
  revokeKey(holder: string): void {
    const slots = this.byKey.get(holder);
    if (slots === undefined) return;
    for (const slot of slots) slot.revoke();
  }

  /** Reads whether the keys and links of the open sockets still authenticate, and closes the sockets of those that do not. */
  async recheck(): Promise<void> {
    if (this.checking || this.byKey.size === 0) return;
    this.checking = true;
    try {
      const holders = [...this.byKey.keys()];
      const keys = holders.filter((holder) => !holder.startsWith(PORTAL_PREFIX));
      const links = holders.filter((holder) => holder.startsWith(PORTAL_PREFIX)).map((holder) => holder.slice(PORTAL_PREFIX.length));
      const active = await findActiveApiKeyIds(this.db.sql, keys);
      const activeLinks = await findActivePortalLinkIds(this.db.sql, links);
      this.failing = false;
      for (const id of keys) if (!active.has(id)) this.revokeKey(id);
      for (const id of links) if (!activeLinks.has(id)) this.revokeKey(PORTAL_PREFIX + id);
    } catch (error) {
      // During a database outage every read fails: one warning per run of failures.
      if (!this.failing) this.log.warn({ err: error }, 'could not check the API keys of open WebSockets; retrying');
      this.failing = true;
    } finally {
      this.checking = false;
    }
  }
}
