import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { redactUrl } from '../../src/app.js';
import { SecretBox } from '../../src/security/crypto.js';
import { STREAM_TICKET_TTL_MS, StreamTickets } from '../../src/stream/tickets.js';

const principal = { api_key_id: '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70', project_id: '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71', project_name: 'p' };

describe('StreamTickets', () => {
  it('redeems a ticket once, for its key and project', () => {
    const tickets = new StreamTickets(new SecretBox(randomBytes(32)));
    const { ticket } = tickets.issue(principal);
    expect(tickets.redeem(ticket)).toEqual({ apiKeyId: principal.api_key_id, projectId: principal.project_id });
    expect(tickets.redeem(ticket)).toBeUndefined();
  });

  it("redeems a portal link's ticket for the link, and refuses one that names both a key and a link", () => {
    const box = new SecretBox(randomBytes(32));
    const tickets = new StreamTickets(box);
    const portal = { link_id: '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f72', project_id: principal.project_id, project_name: 'p', owner_id: 'cus_1', read_only: false, expires_at: new Date() };
    expect(tickets.redeem(tickets.issuePortal(portal).ticket)).toEqual({ portalLinkId: portal.link_id, projectId: portal.project_id });
    const both = { purpose: 'hookrelay.stream-ticket.v1', api_key_id: principal.api_key_id, portal_link_id: portal.link_id, project_id: principal.project_id, expires_at: Date.now() + 10_000, nonce: 'both' };
    expect(tickets.redeem(box.encrypt(JSON.stringify(both)))).toBeUndefined();
    const neither = { ...both, api_key_id: undefined, portal_link_id: undefined, nonce: 'neither' };
    expect(tickets.redeem(box.encrypt(JSON.stringify(neither)))).toBeUndefined();
  });

  it('refuses an expired ticket and one sealed with another key', () => {
    let now = 1_000_000;
    const box = new SecretBox(randomBytes(32));
    const tickets = new StreamTickets(box, () => now);
    const { ticket, expiresAt } = tickets.issue(principal);
    expect(expiresAt.getTime()).toBe(now + STREAM_TICKET_TTL_MS);
    now += STREAM_TICKET_TTL_MS;
    expect(tickets.redeem(ticket)).toBeUndefined();
    const elsewhere = new StreamTickets(new SecretBox(randomBytes(32)));
    expect(elsewhere.redeem(new StreamTickets(box).issue(principal).ticket)).toBeUndefined();
  });

  it('refuses other values the same key encrypts', () => {
    const box = new SecretBox(randomBytes(32));
    const tickets = new StreamTickets(box);
    expect(tickets.redeem(box.encrypt('an hmac secret'))).toBeUndefined();
    expect(tickets.redeem(box.encrypt(JSON.stringify({ ...principal, expires_at: Date.now() + 10_000, nonce: 'n' })))).toBeUndefined();
    expect(tickets.redeem('not a ticket')).toBeUndefined();
  });

  it('a ticket leaves no trace in request logs', () => {
    expect(redactUrl('/v1/inbound-endpoints/x/watch?ticket=v1.abc.def&a=1')).toBe('/v1/inbound-endpoints/x/watch?ticket=[redacted]&a=1');
    expect(redactUrl('/v1/x?a=1&TICKET=v1.abc')).toBe('/v1/x?a=1&TICKET=[redacted]');
    expect(redactUrl('/v1/x?a=1')).toBe('/v1/x?a=1');
  });
});
