import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';

describe('timeouts', () => {
  it('default to 10 s for the headers and 60 s for the whole request', () => {
    const config = parseConfig({});
    expect([config.headersTimeoutSeconds, config.requestTimeoutSeconds]).toEqual([10, 60]);
  });

  it('refuse a headers timeout longer than the request timeout, and non-integers', () => {
    expect(() => parseConfig({ HOOKRELAY_HEADERS_TIMEOUT_SECONDS: '30', HOOKRELAY_REQUEST_TIMEOUT_SECONDS: '20' })).toThrow(ConfigError);
    expect(() => parseConfig({ HOOKRELAY_REQUEST_TIMEOUT_SECONDS: '1.5' })).toThrow(/HOOKRELAY_REQUEST_TIMEOUT_SECONDS must be an integer/);
    expect(() => parseConfig({ HOOKRELAY_HEADERS_TIMEOUT_SECONDS: '0' })).toThrow(/HOOKRELAY_HEADERS_TIMEOUT_SECONDS must be positive/);
  });
});
