import type { PortalLinkCreateOut, PortalLinkOut } from '@hookrelay/shared';
import { describe, expect, it } from 'vitest';
import { usageError } from './usage-failure.js';
import { portalLinkBody } from '../src/flags/portal.js';
import { formatPortalLinkCreated, formatPortalLinkRevoked, formatPortalLinkTable } from '../src/format/portal-links.js';
import { plainStyle } from '../src/format/style.js';

const now = new Date('2026-05-01T12:00:00.000Z');
const ID = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f72';
const TOKEN = `hrp_${'a'.repeat(40)}`;

const link = (fields: Partial<PortalLinkOut> = {}): PortalLinkOut => ({
  id: ID,
  owner_id: 'cus_1',
  read_only: false,
  expires_at: '2026-05-01T13:00:00.000Z',
  created_at: '2026-05-01T12:00:00.000Z',
  ...fields,
});

describe('portal-links create flags', () => {
  it('sends the owner, and read_only and the expiry only when given', () => {
    expect(portalLinkBody({ owner: 'cus_1' })).toEqual({ owner_id: 'cus_1' });
    expect(portalLinkBody({ owner: 'cus_1', 'read-only': true, expires: '2h' })).toEqual({ owner_id: 'cus_1', read_only: true, expires_in_minutes: 120 });
    expect(portalLinkBody({ owner: 'cus_1', expires: '1d' })).toEqual({ owner_id: 'cus_1', expires_in_minutes: 1440 });
    expect(portalLinkBody({ owner: 'cus_1', expires: '1h30m' })).toEqual({ owner_id: 'cus_1', expires_in_minutes: 90 });
  });

  it('refuses an expiry that is not whole minutes from 1m to 24h, or not a duration', async () => {
    const refused = async (expires: string) => (await usageError(Promise.resolve().then(() => portalLinkBody({ owner: 'cus_1', expires })))).message;
    expect(await refused('90s')).toContain('whole minutes');
    expect(await refused('25h')).toContain('from 1m to 24h');
    expect(await refused('0m')).toContain('from 1m to 24h');
    expect(await refused('soon')).toContain('--expires');
  });
});

describe('portal-links output', () => {
  it('prints the URL alone on the first line of a create', () => {
    const created: PortalLinkCreateOut = { ...link({ read_only: true }), url: `https://relay.example/portal#token=${TOKEN}`, token: TOKEN };
    const lines = formatPortalLinkCreated(created, plainStyle, now).split('\n');
    expect(lines[0]).toBe(`https://relay.example/portal#token=${TOKEN}`);
    expect(lines.join('\n')).toContain('read-only');
    expect(lines.join('\n')).toContain(`portal-links revoke ${ID}`);
  });

  it("lists each link's state, and escapes the owner's control characters", () => {
    const table = formatPortalLinkTable(
      [link(), link({ owner_id: 'cus_\u001b[31mred', revoked_at: '2026-05-01T12:00:00.000Z' }), link({ read_only: true, expires_at: '2026-05-01T11:00:00.000Z' })],
      plainStyle,
      now,
    );
    const rows = table.split('\n').slice(1);
    expect(rows[0]).toMatch(/cus_1 +read-write +active/);
    expect(rows[1]).toMatch(/revoked/);
    expect(rows[1]).not.toContain('\u001b');
    expect(rows[2]).toMatch(/read-only +expired/);
    expect(formatPortalLinkRevoked(link(), plainStyle)).toBe(`Revoked portal link ${ID} of cus_1: its URL no longer opens the portal`);
  });
});
