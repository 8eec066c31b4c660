import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  SecretBox,
  constantTimeEqual,
  generateEncryptionKey,
  parseEncryptionKey,
  sha256Hex,
} from '../../src/security/crypto.js';

describe('sha256Hex', () => {
  it('hashes strings and bytes', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex(new Uint8Array([0x61, 0x62, 0x63]))).toBe(sha256Hex('abc'));
    expect(sha256Hex('héllo')).toBe(createHash('sha256').update('héllo', 'utf8').digest('hex'));
  });
});

describe('constantTimeEqual', () => {
  it('compares strings and buffers of any length', () => {
    expect(constantTimeEqual('hr_abc', 'hr_abc')).toBe(true);
    expect(constantTimeEqual('hr_abc', 'hr_abd')).toBe(false);
    expect(constantTimeEqual('short', 'a much longer value')).toBe(false);
    expect(constantTimeEqual('', '')).toBe(true);
    expect(constantTimeEqual('', 'x')).toBe(false);
    expect(constantTimeEqual(Buffer.from('same'), 'same')).toBe(true);
    expect(constantTimeEqual(Buffer.from([1, 2, 3]), Buffer.from([1, 2, 4]))).toBe(false);
  });
});

describe('SecretBox', () => {
  const key = Buffer.alloc(32, 7);
  const box = new SecretBox(key);

  it('round-trips text, including empty and non-ASCII', () => {
    for (const text of ['whsec_c2VjcmV0', '', 'ünïcødé ✓ 🔑', 'x'.repeat(10_000)]) {
      expect(box.decrypt(box.encrypt(text))).toBe(text);
    }
  });

  it('produces v1.<iv>.<tag>.<ciphertext> with a fresh 12-byte IV each time', () => {
    const a = box.encrypt('same secret');
    const b = box.encrypt('same secret');
    expect(a).not.toBe(b);
    const parts = a.split('.');
    expect(parts).toHaveLength(4);
    expect(parts[0]).toBe('v1');
    for (const part of parts.slice(1)) expect(part).toMatch(/^[A-Za-z0-9_-]*$/);
    expect(Buffer.from(parts[1] ?? '', 'base64url')).toHaveLength(12);
    expect(Buffer.from(parts[2] ?? '', 'base64url')).toHaveLength(16);
    expect(Buffer.from(parts[3] ?? '', 'base64url')).toHaveLength('same secret'.length);
  });

  it('refuses keys that are not 32 bytes', () => {
    expect(() => new SecretBox(Buffer.alloc(16))).toThrow(/32 bytes/);
    expect(() => new SecretBox(Buffer.alloc(33))).toThrow(/32 bytes/);
  });

  it('is not affected by later changes to the caller\'s key buffer', () => {
    const mutable = Buffer.alloc(32, 1);
    const own = new SecretBox(mutable);
    const token = own.encrypt('secret');
    mutable.fill(0);
    expect(own.decrypt(token)).toBe('secret');
  });

  it('fails clearly with the wrong key', () => {
    const token = box.encrypt('secret');
    const other = new SecretBox(Buffer.alloc(32, 8));
    expect(() => other.decrypt(token)).toThrow(/wrong encryption key, or the data was tampered with/);
  });

  it('detects tampering with the ciphertext, tag or iv', () => {
    const token = box.encrypt('secret value');
    const [v, iv, tag, ct] = token.split('.') as [string, string, string, string];
    const flip = (part: string): string => {
      const bytes = Buffer.from(part, 'base64url');
      bytes[0] = (bytes[0] ?? 0) ^ 1;
      return bytes.toString('base64url');
    };
    for (const tampered of [
      [v, iv, tag, flip(ct)],
      [v, iv, flip(tag), ct],
      [v, flip(iv), tag, ct],
      [v, iv, tag, ct.slice(0, -2)],
    ]) {
      expect(() => box.decrypt(tampered.join('.'))).toThrow(/cannot decrypt secret/);
    }
  });

  it('rejects malformed tokens', () => {
    const token = box.encrypt('secret');
    expect(() => box.decrypt('')).toThrow(/malformed token/);
    expect(() => box.decrypt('not a token')).toThrow(/malformed token/);
    expect(() => box.decrypt(token.replace(/^v1\./, 'v2.'))).toThrow(/unsupported token version "v2"/);
    expect(() => box.decrypt(`${token}.extra`)).toThrow(/malformed token/);
    expect(() => box.decrypt(token.replace(/\.([^.]*)$/, '.!!$1'))).toThrow(/malformed token/);
    const [v, , tag, ct] = token.split('.');
    expect(() => box.decrypt([v, 'AAAA', tag, ct].join('.'))).toThrow(/malformed token/);
  });
});

describe('SecretBox with a previous key', () => {
  const oldKey = Buffer.alloc(32, 1);
  const newKey = Buffer.alloc(32, 2);
  const old = new SecretBox(oldKey);
  const both = new SecretBox(newKey, [oldKey]);

  it('opens what either key sealed, and says whether the current key did', () => {
    const sealedOld = old.encrypt('old secret');
    const sealedNew = both.encrypt('new secret');
    expect(both.decrypt(sealedOld)).toBe('old secret');
    expect(both.open(sealedOld)).toEqual({ plaintext: 'old secret', current: false });
    expect(both.open(sealedNew)).toEqual({ plaintext: 'new secret', current: true });
  });

  it('seals under the current key only', () => {
    const sealed = both.encrypt('secret');
    expect(new SecretBox(newKey).decrypt(sealed)).toBe('secret');
    expect(() => old.decrypt(sealed)).toThrow(/wrong encryption key/);
  });

  it('reseals what a previous key opens under the current key, leaves the current key\'s alone, and refuses what neither opens', () => {
    const resealed = both.reseal(old.encrypt('moved'));
    expect(resealed).toBeDefined();
    expect(new SecretBox(newKey).decrypt(resealed!)).toBe('moved');
    expect(both.reseal(both.encrypt('stays'))).toBeUndefined();
    expect(() => both.reseal(new SecretBox(Buffer.alloc(32, 3)).encrypt('x'))).toThrow(/wrong encryption key/);
    expect(() => both.reseal('v1.bad')).toThrow(/malformed token/);
  });

  it('refuses a previous key that is not 32 bytes', () => {
    expect(() => new SecretBox(newKey, [Buffer.alloc(31)])).toThrow(/32 bytes/);
  });
});

describe('parseEncryptionKey / generateEncryptionKey', () => {
  it('generates 64 lowercase hex characters that parse back to 32 bytes', () => {
    const text = generateEncryptionKey();
    expect(text).toMatch(/^[0-9a-f]{64}$/);
    expect(generateEncryptionKey()).not.toBe(text);
    const key = parseEncryptionKey(text);
    expect(key).toHaveLength(32);
    expect(key.toString('hex')).toBe(text);
  });

  it('accepts hex (any case, surrounding whitespace) and base64 / base64url', () => {
    const bytes = Buffer.from(Array.from({ length: 32 }, (_, i) => i * 8 + 3));
    expect(parseEncryptionKey(bytes.toString('hex').toUpperCase())).toEqual(bytes);
    expect(parseEncryptionKey(`  ${bytes.toString('hex')}\n`)).toEqual(bytes);
    expect(parseEncryptionKey(bytes.toString('base64'))).toEqual(bytes);
    expect(parseEncryptionKey(bytes.toString('base64').replace(/=$/, ''))).toEqual(bytes);
    expect(parseEncryptionKey(bytes.toString('base64url'))).toEqual(bytes);
  });

  it('rejects anything else with a clear message that does not echo the value', () => {
    for (const bad of [
      '',
      'abc',
      'g'.repeat(64),
      'a'.repeat(63),
      'a'.repeat(66),
      Buffer.alloc(16).toString('base64'),
      Buffer.alloc(33).toString('base64'),
      `${'A'.repeat(42)}!=`,
      `${'A'.repeat(43)}==`,
    ]) {
      let message = '';
      try {
        parseEncryptionKey(bad);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/invalid encryption key: expected 64 hex characters or the base64 encoding of 32 bytes/);
      if (bad.length > 3) expect(message).not.toContain(bad);
    }
  });
});
