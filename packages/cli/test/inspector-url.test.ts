import { describe, expect, it } from 'vitest';
import { inspectorUrl } from '../src/inspector.js';

describe('inspectorUrl', () => {
  it('puts the key (and the endpoint) in the fragment, never in the path or query', () => {
    const url = new URL(inspectorUrl('http://127.0.0.1:8787/', 'hr_abc', '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70'));
    expect(url.pathname).toBe('/');
    expect(url.search).toBe('');
    expect(url.hash).toBe('#key=hr_abc&endpoint=0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70');
  });

  it('keeps a path prefix of the API URL and encodes what needs it', () => {
    expect(inspectorUrl('https://relay.example.com/hookrelay', 'k&y=1')).toBe('https://relay.example.com/hookrelay/#key=k%26y%3D1');
  });
});
