import { describe, expect, it } from 'vitest';
import { detectEventType, extractEventType, inboundEventType, streamedEventType } from '../../src/ingest/event-type.js';

const body = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));

describe('extractEventType', () => {
  it('is null without configuration', () => {
    expect(extractEventType(null, null, body({ type: 'a' }), [])).toBeNull();
  });

  it('reads dot paths, array indexes, numbers and booleans from a JSON body', () => {
    expect(extractEventType('body', 'type', body({ type: 'a' }), [])).toBe('a');
    expect(extractEventType('body', 'a.b', body({ a: { b: 'deep' } }), [])).toBe('deep');
    expect(extractEventType('body', 'a.b.c.d', body({ a: { b: { c: { d: 'deeper' } } } }), [])).toBe('deeper');
    expect(extractEventType('body', 'items.1.kind', body({ items: [{ kind: 'x' }, { kind: 'y' }] }), [])).toBe('y');
    expect(extractEventType('body', 'n', body({ n: 1.5 }), [])).toBe('1.5');
    expect(extractEventType('body', 'f', body({ f: false }), [])).toBe('false');
    expect(extractEventType('body', 'type', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body({ type: 'bom' })]), [])).toBe('bom');
  });

  it('fails soft: null for anything it cannot read', () => {
    for (const [path, input] of [
      ['type', '{}'],
      ['a.b', '{"a":"str"}'],
      ['a.b', '{"a":[{"b":1}]}'],
      ['items.x', '{"items":[1]}'],
      ['items.5', '{"items":[1]}'],
      ['type', '{"type":null}'],
      ['type', '{"type":{}}'],
      ['type', '{"type":""}'],
      ['type', `{"type":"${'y'.repeat(256)}"}`],
      ['type', 'nope'],
      ['type', ''],
      ['__proto__', '{}'],
      ['constructor.name', '{}'],
      ['type', '[' .repeat(100_000)],
    ] as const) {
      expect(extractEventType('body', path, body(input), []), `${path} in ${input.slice(0, 40)}`).toBeNull();
    }
  });

  it('reads the first header line of the name, case-insensitively', () => {
    const headers: [string, string][] = [
      ['Content-Type', 'application/json'],
      ['X-Event', 'first'],
      ['x-event', 'second'],
    ];
    expect(extractEventType('header', 'x-EVENT', Buffer.alloc(0), headers)).toBe('first');
    expect(extractEventType('header', 'x-missing', Buffer.alloc(0), headers)).toBeNull();
    expect(extractEventType('header', 'x-long', Buffer.alloc(0), [['x-long', 'z'.repeat(256)]])).toBeNull();
  });
});

describe('detectEventType and inboundEventType', () => {
  const headers = (...pairs: [string, string][]) => pairs;

  it('reads the provider headers first, as sent', () => {
    expect(detectEventType(body({ type: 'x' }), headers(['X-GitHub-Event', 'pull_request']))).toBe('pull_request');
    expect(detectEventType(body({ type: 'x' }), headers(['x-shopify-topic', 'orders/create']))).toBe('orders/create');
    expect(detectEventType(body('not json'), headers(['X-GitHub-Event', 'ping']))).toBe('ping');
    expect(detectEventType(body({}), headers(['X-GitHub-Event', '']))).toBeNull();
  });

  it('reads Slack’s inner event type, else its outer type', () => {
    expect(detectEventType(body({ type: 'event_callback', event: { type: 'message' } }), [])).toBe('message');
    expect(detectEventType(body({ type: 'url_verification', challenge: 'c' }), [])).toBe('url_verification');
    expect(detectEventType(body({ type: 'block_actions', event: { type: 'inner' } }), headers(['X-Slack-Signature', 'v0=1']))).toBe('inner');
    expect(detectEventType(body({ type: 'block_actions', event: { type: 'inner' } }), [])).toBe('block_actions');
    expect(detectEventType(body({ type: 'event_callback', event: ['x'] }), [])).toBe('event_callback');
  });

  it('reads a top-level string type of a JSON object, after whitespace and a BOM', () => {
    expect(detectEventType(body('  \n{"type":"invoice.paid"}'), [])).toBe('invoice.paid');
    expect(detectEventType(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body({ type: 'bom' })]), [])).toBe('bom');
    for (const input of ['[{"type":"a"}]', '{"type":1}', '{"type":""}', `{"type":"${'x'.repeat(256)}"}`, '{"data":{"type":"a"}}', 'type=a', '', '{']) {
      expect(detectEventType(body(input), []), input).toBeNull();
    }
  });

  it('uses the endpoint’s own rule instead when it has one', () => {
    const payload = body({ type: 'provider', kind: 'own' });
    expect(inboundEventType({ source: 'body', path: 'kind' }, payload, headers(['X-GitHub-Event', 'push']))).toBe('own');
    expect(inboundEventType({ source: 'header', path: 'X-Kind' }, payload, headers(['x-kind', 'h']))).toBe('h');
    expect(inboundEventType({ source: null, path: null }, payload, [])).toBe('provider');
  });
});

describe('streamedEventType', () => {
  const rules = [
    { source: null, path: null },
    { source: 'body' as const, path: 'type' },
    { source: 'body' as const, path: 'a.b' },
    { source: 'body' as const, path: 'items.1.kind' },
    { source: 'body' as const, path: 'n' },
    { source: 'header' as const, path: 'X-Event' },
  ];
  const headerSets: [string, string][][] = [[], [['X-GitHub-Event', 'push']], [['x-shopify-topic', 'orders/create']], [['X-Slack-Signature', 'v0=1']], [['X-Event', 'from-header']]];
  const bodies = [
    { type: 'a' },
    { type: 'event_callback', event: { type: 'message' } },
    { type: 'url_verification' },
    { type: 'x', event: ['type'] },
    { a: { b: 'deep' }, type: 7 },
    { items: [{ kind: 'x' }, { kind: 'y' }], n: 1e3 },
    { n: true, type: 'y'.repeat(256) },
    [{ type: 'in-array' }],
    'not json',
    '{"type":"cut"',
    '\ufeff{"type":"bom"}',
    '  {"type":"spaced"} ',
  ];

  it('gives what inboundEventType gives for the whole body, for every rule, header set and body, cut into pieces', () => {
    for (const rule of rules) {
      for (const headers of headerSets) {
        for (const value of bodies) {
          const bytes = body(value);
          const streamed = streamedEventType(rule, headers);
          for (let at = 0; at < bytes.length; at += 5) streamed.write(bytes.subarray(at, at + 5));
          expect(streamed.end(), `${JSON.stringify(rule)} ${JSON.stringify(headers)} ${bytes.toString()}`).toBe(inboundEventType(rule, bytes, headers));
        }
      }
    }
  });
});
