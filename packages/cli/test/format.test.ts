import { stripVTControlCharacters } from 'node:util';
import type { EndpointCreateOut, EndpointSummaryOut } from '@hookrelay/shared';
import { describe, expect, it } from 'vitest';
import { describeFailure, usageFailure } from '../src/errors.js';
import { HookrelayApiError } from '@hookrelay/shared';
import { formatProfiles } from '../src/format/account.js';
import { formatCreatedEndpoint, formatEndpointTable } from '../src/format/endpoints.js';
import { formatFailure } from '../src/format/error.js';
import { formatKeyValues } from '../src/format/key-value.js';
import { colorLevel, createStyle, plainStyle } from '../src/format/style.js';
import { formatTable } from '../src/format/table.js';
import { formatRelative } from '../src/format/time.js';

const colour = createStyle(1);
const ESC = '\u001b[';
const detected = { level: 2, hasBasic: true, has256: true, has16m: false } as const;

describe('colorLevel', () => {
  it('is off when NO_COLOR is set, whatever the terminal', () => {
    expect(colorLevel({ NO_COLOR: '1' }, true, detected)).toBe(0);
    expect(colorLevel({ NO_COLOR: '1', FORCE_COLOR: '3' }, true, detected)).toBe(0);
  });

  it('ignores an empty NO_COLOR', () => {
    expect(colorLevel({ NO_COLOR: '' }, true, detected)).toBe(2);
  });

  it('is off when the stream is not a terminal, unless forced', () => {
    expect(colorLevel({}, false, detected)).toBe(0);
    expect(colorLevel({ FORCE_COLOR: '1' }, false, false)).toBe(1);
    expect(colorLevel({ FORCE_COLOR: '0' }, true, detected)).toBe(0);
  });

  it('follows the terminal otherwise', () => {
    expect(colorLevel({}, true, detected)).toBe(2);
    expect(colorLevel({ TERM: 'dumb' }, true, detected)).toBe(0);
  });
});

describe('formatTable', () => {
  const rows = [
    { id: 'a', name: 'short' },
    { id: 'longer-id', name: 'x' },
  ];
  const columns = [
    { header: 'ID', value: (r: (typeof rows)[number]) => r.id },
    { header: 'NAME', value: (r: (typeof rows)[number]) => r.name, color: (t: string, _r: unknown, s: typeof plainStyle) => s.red(t) },
  ];

  it('aligns columns and does not pad the last one', () => {
    expect(formatTable(columns, rows, plainStyle)).toBe(['ID         NAME', 'a          short', 'longer-id  x'].join('\n'));
  });

  it('measures width without colour escapes', () => {
    const coloured = formatTable(columns, rows, colour);
    expect(coloured).toContain(ESC);
    expect(stripVTControlCharacters(coloured)).toBe(formatTable(columns, rows, plainStyle));
  });
});

describe('formatKeyValues', () => {
  it('aligns labels and skips undefined values', () => {
    expect(formatKeyValues([['ID', 'ep_1'], ['Missing', undefined], ['Description', 'd']], plainStyle)).toBe(
      ['ID:           ep_1', 'Description:  d'].join('\n'),
    );
  });
});

describe('formatFailure', () => {
  it('prints CODE: message (request id …) and the hint', () => {
    const report = describeFailure(new HookrelayApiError('ENDPOINT_NOT_FOUND', 'endpoint not found', 404, 'req_9'));
    const [first, hint] = formatFailure(report, plainStyle).split('\n');
    expect(first).toBe('ENDPOINT_NOT_FOUND: endpoint not found (request id req_9)');
    expect(hint).toMatch(/^hint: /u);
  });

  it('omits the request id when there is none, and lists details', () => {
    const text = formatFailure({ ...describeFailure(usageFailure('bad input')), details: [{ path: 'url', message: 'must start with https://' }] }, plainStyle);
    expect(text.split('\n')).toEqual(['INVALID_ARGUMENTS: bad input', '  url: must start with https://', 'hint: See --help for the flags of this command.']);
  });
});

const now = new Date('2026-11-22T12:00:00.000Z');

describe('endpoint formatters', () => {
  const created: EndpointCreateOut = {
    id: 'ep_0123456789abcdef0123456789abcdef',
    url: 'https://example.com/hook',
    description: '',
    signing_key_id: 'sk_0123',
    signing_secret: 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI=',
    key_hint: 'MTI=',
    owner_id: null,
    event_types: null,
    channels: null,
    ephemeral: true,
    expires_at: '2026-11-22T12:30:00.000Z',
    created_at: '2026-11-22T12:00:00.000Z',
  };

  it('shows the signing secret once, on its own line, with the warning', () => {
    const text = formatCreatedEndpoint(created, plainStyle, now);
    const lines = text.split('\n');
    expect(lines).toContain(`  ${created.signing_secret}`);
    expect(text).toMatch(/shown only once/u);
    expect(text).toMatch(/will not show this secret again/u);
    expect(text).toContain('2026-11-22T12:30:00.000Z (in 30m)');
  });

  it('lists summaries in a table with status and expiry', () => {
    const summary: EndpointSummaryOut = {
      id: created.id,
      url: created.url,
      description: 'ci',
      paused: true,
      ephemeral: true,
      expires_at: created.expires_at,
      created_at: created.created_at,
    };
    const [header, row] = formatEndpointTable([summary], plainStyle, now).split('\n');
    expect(header).toMatch(/^ID\s+URL\s+STATUS\s+EXPIRES\s+CREATED\s+DESCRIPTION$/u);
    expect(row).toContain('paused');
    expect(row).toContain('in 30m');
  });
});

describe('formatProfiles', () => {
  it('marks the current profile and never shows a whole key', () => {
    const text = formatProfiles(
      {
        config_path: '/c/config.json',
        current_profile: 'b',
        profiles: [
          { name: 'a', current: false, api_url: 'http://a.test', api_key_hint: null },
          { name: 'b', current: true, api_url: 'http://b.test', api_key_hint: 'hr_…abcd' },
        ],
      },
      plainStyle,
    );
    expect(text).toMatch(/^\*\s+b\s+http:\/\/b\.test\s+hr_…abcd$/mu);
    expect(text).toMatch(/^\s+a\s+http:\/\/a\.test\s+\(logged out\)$/mu);
  });
});

describe('formatRelative', () => {
  it.each([
    ['2026-11-22T12:00:30.000Z', 'in 30s'],
    ['2026-11-22T12:30:00.000Z', 'in 30m'],
    ['2026-11-22T10:00:00.000Z', '2h ago'],
    ['2026-11-25T12:00:00.000Z', 'in 3d'],
    ['2026-11-22T12:00:00.400Z', 'now'],
    ['2026-11-22T11:59:59.600Z', 'now'],
  ])('%s → %s', (iso, expected) => {
    expect(formatRelative(iso, now)).toBe(expected);
  });
});
