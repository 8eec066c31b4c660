import { randomBytes } from 'node:crypto';
import type { ApiKeyPrincipal } from '../db/api-keys.js';
import type { SecretBox } from '../security/crypto.js';

/** How long a stream ticket can be redeemed after it was issued. */
export const STREAM_TICKET_TTL_MS = 30_000;
/** Distinguishes a ticket from any other value the same key encrypts (stored secrets). */
const PURPOSE = 'hookrelay.stream-ticket.v1';

interface TicketBody {
  purpose: typeof PURPOSE;
  api_key_id: string;
  project_id: string;
  expires_at: number;
  nonce: string;
}

/** The API key a redeemed ticket stands for (its project and name are read again from the database). */
export interface RedeemedTicket {
  apiKeyId: string;
  projectId: string;
}

/**
 * Tickets for browser WebSockets. A ticket is the API key's id, its project, an expiry and a nonce,
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
    const expiresAt = this.now() + STREAM_TICKET_TTL_MS;
    const body: TicketBody = {
      purpose: PURPOSE,
      api_key_id: principal.api_key_id,
      project_id: principal.project_id,
      expires_at: expiresAt,
      nonce: randomBytes(16).toString('hex'),
    };
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
    if (typeof body.nonce !== 'string' || typeof body.api_key_id !== 'string' || typeof body.project_id !== 'string') return undefined;
    this.forgetExpired(now);
    if (this.redeemed.has(body.nonce)) return undefined;
    this.redeemed.set(body.nonce, body.expires_at);
    return { apiKeyId: body.api_key_id, projectId: body.project_id };
  }

  private forgetExpired(now: number): void {
    for (const [nonce, expiresAt] of this.redeemed) if (expiresAt <= now) this.redeemed.delete(nonce);
  }
}
