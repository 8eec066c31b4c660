import { randomBytes } from 'node:crypto';
import type { ApiKeyPrincipal } from '../db/api-keys.js';
import type { PortalLinkPrincipal } from '../db/portal-links.js';
import type { SecretBox } from '../security/crypto.js';

/** How long a stream ticket can be redeemed after it was issued. */
export const STREAM_TICKET_TTL_MS = 30_000;
/** Distinguishes a ticket from any other value the same key encrypts (stored secrets). */
const PURPOSE = 'hookrelay.stream-ticket.v1';

interface TicketBody {
  purpose: typeof PURPOSE;
  /** An API key's ticket; absent on a portal link's. */
  api_key_id?: string;
  /** A portal link's ticket (GET /v1/portal/watch); absent on an API key's. */
  portal_link_id?: string;
  project_id: string;
  expires_at: number;
  nonce: string;
}

/**
 * The API key or portal link a redeemed ticket stands for (whether it still authenticates, and its
 * project's name, are read again from the database).
 */
export type RedeemedTicket = { apiKeyId: string; projectId: string } | { portalLinkId: string; projectId: string };

/**
 * Tickets for browser WebSockets. A ticket is the API key's (or portal link's) id, its project, an expiry and a nonce,
 * sealed with the server's encryption key (AES-GCM), so any process of the deployment can check it
 * without shared state; the key itself never travels in a URL. Each process remembers the nonces it
 * has redeemed until they expire, so a ticket opens at most one socket per process within its
 * 30 seconds.
 */
export class StreamTickets {
  private readonly redeemed = new Map<string, number>();

  constructor(
    private readonly box: SecretBox,
    private readonly now: () => number = Date.now,
  ) {}

  issue(principal: ApiKeyPrincipal): { ticket: string; expiresAt: Date } {
    return this.seal({ api_key_id: principal.api_key_id, project_id: principal.project_id });
  }

  /** A ticket of a portal link, for the portal's own socket. */
  issuePortal(portal: PortalLinkPrincipal): { ticket: string; expiresAt: Date } {
    return this.seal({ portal_link_id: portal.link_id, project_id: portal.project_id });
  }

  private seal(holder: Pick<TicketBody, 'api_key_id' | 'portal_link_id' | 'project_id'>): { ticket: string; expiresAt: Date } {
    const expiresAt = this.now() + STREAM_TICKET_TTL_MS;
    const body: TicketBody = { purpose: PURPOSE, ...holder, expires_at: expiresAt, nonce: randomBytes(16).toString('hex') };
    return { ticket: this.box.encrypt(JSON.stringify(body)), expiresAt: new Date(expiresAt) };
  }

  /** The ticket's key when it is genuine, unexpired and not redeemed before here; else undefined. */
  redeem(ticket: string): RedeemedTicket | undefined {
    let body: Partial<TicketBody>;
    try {
      body = JSON.parse(this.box.decrypt(ticket)) as Partial<TicketBody>;
    } catch {
      return undefined;
    }
    const now = this.now();
    if (body.purpose !== PURPOSE || typeof body.expires_at !== 'number' || body.expires_at <= now) return undefined;
    if (typeof body.nonce !== 'string' || typeof body.project_id !== 'string') return undefined;
    const holder =
      typeof body.api_key_id === 'string' && body.portal_link_id === undefined
        ? { apiKeyId: body.api_key_id, projectId: body.project_id }
        : typeof body.portal_link_id === 'string' && body.api_key_id === undefined
          ? { portalLinkId: body.portal_link_id, projectId: body.project_id }
          : undefined;
    if (holder === undefined) return undefined;
    this.forgetExpired(now);
    if (this.redeemed.has(body.nonce)) return undefined;
    this.redeemed.set(body.nonce, body.expires_at);
    return holder;
  }

  private forgetExpired(now: number): void {
    for (const [nonce, expiresAt] of this.redeemed) if (expiresAt <= now) this.redeemed.delete(nonce);
  }
}
