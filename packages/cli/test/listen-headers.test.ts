import { describe, expect, it } from 'vitest';
import { forwardHeaders, headerPairs } from '../src/listen/forward-headers.js';

const received: [string, string][] = [
  ['Host', 'hooks.example.com'],
  ['User-Agent', 'GitHub-Hookshot/1'],
  ['Connection', 'keep-alive, X-Hop'],
  ['Keep-Alive', 'timeout=5'],
  ['X-Hop', 'per-connection'],
  ['Content-Type', 'application/json'],
  ['Content-Length', '999'],
  ['X-Hub-Signature-256', 'sha256=abc'],
  ['Transfer-Encoding', 'chunked'],
  ['TE', 'trailers'],
  ['Trailer', 'Expires'],
  ['Upgrade', 'h2c'],
  ['Proxy-Authorization', 'Basic x'],
  ['Proxy-Connection', 'keep-alive'],
  ['Expect', '100-continue'],
  ['X-Dup', 'one'],
  ['x-dup', 'two'],
];

describe('forwardHeaders', () => {
  it('keeps order, case and repeats; drops hop-by-hop headers and those named in Connection', () => {
    const pairs = headerPairs(forwardHeaders(received, { host: 'localhost:3000', bodyLength: 12 }));
    expect(pairs).toEqual([
      ['host', 'localhost:3000'],
      ['User-Agent', 'GitHub-Hookshot/1'],
      ['Content-Type', 'application/json'],
      ['X-Hub-Signature-256', 'sha256=abc'],
      ['X-Dup', 'one'],
      ['x-dup', 'two'],
      ['content-length', '12'],
    ]);
  });

  it("keeps the sender's Host with --preserve-host", () => {
    const pairs = headerPairs(forwardHeaders(received, { host: null, bodyLength: 0 }));
    expect(pairs[0]).toEqual(['host', 'hooks.example.com']);
    expect(pairs.filter(([name]) => name.toLowerCase() === 'host')).toHaveLength(1);
  });

  it('recomputes content-length from the body; adds none for a bodiless request that had none', () => {
    expect(headerPairs(forwardHeaders([['Content-Length', '5']], { host: 'h', bodyLength: 0 }))).toContainEqual(['content-length', '0']);
    expect(headerPairs(forwardHeaders([['Accept', '*/*']], { host: 'h', bodyLength: 0 })).map(([n]) => n)).toEqual(['host', 'Accept']);
    expect(headerPairs(forwardHeaders([], { host: 'h', bodyLength: 3 }))).toEqual([
      ['host', 'h'],
      ['content-length', '3'],
    ]);
  });

  it('is a flat list, as undici takes it', () => {
    expect(forwardHeaders([['A', '1']], { host: 'h', bodyLength: 0 })).toEqual(['host', 'h', 'A', '1']);
  });
});
