import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { INSPECTOR_HEADERS, portalHeaders } from '../../src/routes/inspector.js';

describe('HOOKRELAY_PORTAL_FRAME_ANCESTORS', () => {
  it('is none by default, and a list of origins when set', () => {
    expect(parseConfig({}).portalFrameAncestors).toEqual([]);
    expect(parseConfig({ HOOKRELAY_PORTAL_FRAME_ANCESTORS: ' https://app.example.com, http://127.0.0.1:4000/ ,HTTPS://Shop.Example:8443,' }).portalFrameAncestors).toEqual([
      'https://app.example.com',
      'http://127.0.0.1:4000',
      'https://shop.example:8443',
    ]);
  });

  it('refuses what is not an origin, naming it', () => {
    for (const entry of ['*', "'self'", 'app.example.com', 'https://app.example.com/embed', 'https://app.example.com?x=1', 'ftp://app.example.com', 'https://user@app.example.com', "https://a.example 'unsafe-inline'"]) {
      expect(() => parseConfig({ HOOKRELAY_PORTAL_FRAME_ANCESTORS: entry }), entry).toThrow(/HOOKRELAY_PORTAL_FRAME_ANCESTORS: .* is not an origin/);
    }
  });
});

describe("the portal page's headers", () => {
  it("cannot be framed without origins, as the inspector", () => {
    const headers = portalHeaders([]);
    expect(headers).toEqual(INSPECTOR_HEADERS);
  });

  it('names the origins in frame-ancestors and drops X-Frame-Options, keeping the rest of the policy', () => {
    const headers = portalHeaders(['https://app.example.com', 'http://127.0.0.1:4000']);
    expect(headers['content-security-policy']).toBe(INSPECTOR_HEADERS['content-security-policy']!.replace("frame-ancestors 'none'", 'frame-ancestors https://app.example.com http://127.0.0.1:4000'));
    expect(headers['x-frame-options']).toBeUndefined();
    expect(headers['x-content-type-options']).toBe('nosniff');
  });
});
