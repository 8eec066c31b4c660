import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../src/digest.js';
import { newUuidv7, UUIDV7_PATTERN, uuidv7Time } from '../src/ids.js';

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
