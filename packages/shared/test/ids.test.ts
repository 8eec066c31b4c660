import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../src/digest.js';
import {
  API_KEY_PATTERN,
  ENDPOINT_ID_PATTERN,
  isUuid,
  keyHint,
  newApiKey,
  newEndpointId,
  newSecretToken,
  newSigningKeyId,
  newUuidv7,
  SECRET_TOKEN_PATTERN,
  UUID_PATTERN,
  UUIDV7_PATTERN,
  uuidv7AtTime,
  uuidv7Time,
} from '../src/ids.js';

describe('newUuidv7', () => {
  it('gives unique, growing UUIDv7s of the current time across many refills of its random pool', () => {
    const before = Date.now();
    const ids = Array.from({ length: 5_000 }, () => newUuidv7());
    const after = Date.now();
    expect(ids.every((id) => UUIDV7_PATTERN.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
    for (const id of [ids[0]!, ids[ids.length - 1]!]) {
      expect(uuidv7Time(id)).toBeGreaterThanOrEqual(before);
      expect(uuidv7Time(id)).toBeLessThanOrEqual(after);
    }
  });

  it('draws fresh random bits for each id: the random tails of consecutive ids differ', () => {
    const tails = new Set(Array.from({ length: 200 }, () => newUuidv7().slice(-8)));
    expect(tails.size).toBeGreaterThan(190);
  });
});

describe('sha256Hex', () => {
  it('is the SHA-256 of the bytes, and of a string as UTF-8, in lowercase hex', () => {
    const bytes = Buffer.from([0, 1, 2, 250, 255]);
    expect(sha256Hex(bytes)).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('héllo')).toBe(createHash('sha256').update(Buffer.from('héllo', 'utf8')).digest('hex'));
    expect(sha256Hex(new Uint8Array(bytes))).toBe(sha256Hex(bytes));
  });
});

describe('the id patterns', () => {
  it('take what the generators make, whole, and nothing longer, shorter or of another alphabet', () => {
    const cases: [RegExp, () => string, string][] = [
      [ENDPOINT_ID_PATTERN, newEndpointId, `ep_${'a'.repeat(32)}`],
      [API_KEY_PATTERN, newApiKey, `hr_${'a'.repeat(40)}`],
      [SECRET_TOKEN_PATTERN, newSecretToken, 'a'.repeat(32)],
    ];
    for (const [pattern, generate, example] of cases) {
      const id = generate();
      expect(id, String(pattern)).toMatch(pattern);
      expect(generate()).not.toBe(id);
      expect(pattern.test(example), String(pattern)).toBe(true);
      expect(pattern.test(`x${example}`), `${String(pattern)} with a leading character`).toBe(false);
      expect(pattern.test(`${example}a`), `${String(pattern)} with a trailing character`).toBe(false);
      expect(pattern.test(example.slice(0, -1)), `${String(pattern)} one short`).toBe(false);
      expect(pattern.test(`${example.slice(0, -1)}g`), `${String(pattern)} with a non-hex character`).toBe(false);
      expect(pattern.test(example.toUpperCase()), `${String(pattern)} in uppercase`).toBe(false);
    }
    expect(newSigningKeyId()).toMatch(/^sk_[0-9a-f]{24}$/);
    expect(newSigningKeyId()).not.toBe(newSigningKeyId());
  });

  it('UUIDs: any version in either case for UUID_PATTERN, version 7 and the RFC variant for UUIDV7_PATTERN, whole strings only', () => {
    const v7 = '0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b';
    const v4 = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
    expect(isUuid(v7)).toBe(true);
    expect(isUuid(v4)).toBe(true);
    expect(isUuid(v7.toUpperCase())).toBe(true);
    expect(UUIDV7_PATTERN.test(v7)).toBe(true);
    expect(UUIDV7_PATTERN.test(v7.toUpperCase())).toBe(true);
    expect(UUIDV7_PATTERN.test(v4)).toBe(false);
    expect(UUIDV7_PATTERN.test('0190a1b2-c3d4-7e5f-ca6b-7c8d9e0f1a2b')).toBe(false);
    for (const id of [v7, v4]) {
      for (const pattern of [UUID_PATTERN, UUIDV7_PATTERN]) {
        expect(pattern.test(`x${id}`)).toBe(false);
        expect(pattern.test(`${id}0`)).toBe(false);
      }
    }
    expect(isUuid(v7.replace(/-/g, ''))).toBe(false);
    expect(isUuid(`${v7.slice(0, -1)}g`)).toBe(false);
  });
});

describe('uuidv7AtTime', () => {
  it('is the smallest UUIDv7 of the millisecond, from a Date or a number of milliseconds', () => {
    expect(uuidv7AtTime(new Date('2024-01-02T03:04:05.678Z'))).toBe('018cc820-db2e-7000-8000-000000000000');
    expect(uuidv7AtTime(Date.UTC(2024, 0, 2, 3, 4, 5, 678))).toBe('018cc820-db2e-7000-8000-000000000000');
    expect(uuidv7AtTime(1.9)).toBe('00000000-0001-7000-8000-000000000000');
    expect(uuidv7AtTime(0)).toBe('00000000-0000-7000-8000-000000000000');
    expect(uuidv7AtTime(0xffff_ffff_ffff)).toBe('ffffffff-ffff-7000-8000-000000000000');
    expect(uuidv7Time(uuidv7AtTime(1_700_000_000_123))).toBe(1_700_000_000_123);
  });

  it('refuses a time a UUIDv7 cannot hold', () => {
    for (const time of [-1, 0x1_0000_0000_0000, Number.NaN, Number.POSITIVE_INFINITY, new Date(Number.NaN)]) {
      expect(() => uuidv7AtTime(time), String(time)).toThrow(new RangeError('time out of UUIDv7 range'));
    }
  });
});

describe('keyHint', () => {
  it('is the last four characters, or the last n', () => {
    expect(keyHint('hr_0123456789abcdef')).toBe('cdef');
    expect(keyHint('hr_0123456789abcdef', 6)).toBe('abcdef');
  });
});
