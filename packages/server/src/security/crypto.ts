/**
 * Hashing, constant-time comparison and encryption at rest (docs/api.md, Keys, ids and secrets):
 * API keys and tokens are stored as SHA-256 hashes; HMAC and signing secrets are sealed with
 * AES-256-GCM under HOOKRELAY_ENCRYPTION_KEY (and opened with HOOKRELAY_PREVIOUS_ENCRYPTION_KEY too
 * while a key is being replaced).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export { sha256Hex } from '@hookrelay/shared';

/**
 * Compares two secrets without leaking where they differ or how long the expected one is:
 * both sides are hashed first, so timingSafeEqual always sees two 32-byte buffers.
 */
export function constantTimeEqual(a: string | Buffer, b: string | Buffer): boolean {
  const da = createHash('sha256').update(a).digest();
  const db = createHash('sha256').update(b).digest();
  return timingSafeEqual(da, db);
}

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const VERSION = 'v1';
const BASE64URL = /^[A-Za-z0-9_-]*$/;

function decodeBase64url(part: string): Buffer | null {
  // Buffer.from silently skips invalid characters; a token with any is corrupt, not "close enough".
  return BASE64URL.test(part) ? Buffer.from(part, 'base64url') : null;
}

/** What opened a sealed token: its plaintext, and whether the current key (not a previous one) did. */
export interface OpenedSecret {
  plaintext: string;
  current: boolean;
}

/**
 * AES-256-GCM with a random 96-bit IV per message. Token format:
 * `v1.<base64url iv>.<base64url tag>.<base64url ciphertext>`; the version prefix leaves room for
 * a future algorithm without guessing at old rows.
 *
 * It seals under one key and opens with that key or any previous one, so that a key can be replaced
 * while secrets sealed under the old one are still stored (see `reseal`). A token does not name its
 * key: GCM's tag tells a wrong key apart at the cost of one failed check per previous key tried.
 */
export class SecretBox {
  readonly #keys: readonly Buffer[];

  constructor(key: Buffer, previousKeys: readonly Buffer[] = []) {
    for (const k of [key, ...previousKeys]) {
      if (!Buffer.isBuffer(k) || k.length !== KEY_BYTES) {
        throw new Error(`SecretBox key must be exactly ${KEY_BYTES} bytes`);
      }
    }
    // Copies so a caller zeroing or reusing its buffers cannot change ours.
    this.#keys = [key, ...previousKeys].map((k) => Buffer.from(k));
  }

  encrypt(plaintext: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#keys[0]!, iv, { authTagLength: TAG_BYTES });
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [
      VERSION,
      iv.toString('base64url'),
      tag.toString('base64url'),
      ciphertext.toString('base64url'),
    ].join('.');
  }

  decrypt(token: string): string {
    return this.open(token).plaintext;
  }

  /** Opens `token` with the current key, else with each previous key in turn; throws when none opens it. */
  open(token: string): OpenedSecret {
    const parts = typeof token === 'string' ? token.split('.') : [];
    const [version, ivText, tagText, ciphertextText] = parts;
    if (
      parts.length !== 4 ||
      version === undefined ||
      ivText === undefined ||
      tagText === undefined ||
      ciphertextText === undefined
    ) {
      throw new Error('cannot decrypt secret: malformed token (expected v1.<iv>.<tag>.<ciphertext>)');
    }
    if (version !== VERSION) {
      throw new Error(`cannot decrypt secret: unsupported token version "${version}"`);
    }
    const iv = decodeBase64url(ivText);
    const tag = decodeBase64url(tagText);
    const ciphertext = decodeBase64url(ciphertextText);
    if (iv === null || tag === null || ciphertext === null || iv.length !== IV_BYTES || tag.length !== TAG_BYTES) {
      throw new Error('cannot decrypt secret: malformed token (bad iv, tag or ciphertext encoding)');
    }
    for (const [index, key] of this.#keys.entries()) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
        decipher.setAuthTag(tag);
        const plaintext = Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
        return { plaintext, current: index === 0 };
      } catch {
        // the next key, if any
      }
    }
    throw new Error(
      'cannot decrypt secret: authentication failed (wrong encryption key, or the data was tampered with)',
    );
  }

  /**
   * `token` sealed again under the current key when a previous key opened it; undefined when the
   * current key opens it already. Throws when no key opens it.
   */
  reseal(token: string): string | undefined {
    const opened = this.open(token);
    return opened.current ? undefined : this.encrypt(opened.plaintext);
  }
}

const HEX_KEY = /^[0-9a-fA-F]{64}$/;
// 32 bytes is 43 base64 characters plus one '=' of padding; either alphabet, padding optional.
const BASE64_KEY = /^[A-Za-z0-9+/_-]{43}=?$/;

/** The keys that seal and open secrets at rest, and where they came from (for messages and rotation). */
export interface EncryptionKeys {
  /** Seals new secrets and opens them. */
  current: Buffer;
  /** Opens secrets sealed before the current key replaced it; never seals. */
  previous: Buffer | undefined;
  /** The current key's origin as an operator knows it: the variable or the key file's path. */
  currentName: string;
  previousName: string | undefined;
  /** The data dir's key file: the current key's origin when HOOKRELAY_ENCRYPTION_KEY is unset. */
  keyFile: string;
  fromKeyFile: boolean;
  /**
   * The data dir had no key file, so the current key was made now. `persistGeneratedKey`
   * (runtime.ts) writes it once the database has accepted it: a data dir whose file was lost gets no
   * new key beside secrets sealed under the old one.
   */
  generated: boolean;
}

/** Parses HOOKRELAY_ENCRYPTION_KEY: 64 hex characters, or base64/base64url of 32 bytes. */
export function parseEncryptionKey(text: string): Buffer {
  const trimmed = text.trim();
  if (HEX_KEY.test(trimmed)) return Buffer.from(trimmed, 'hex');
  if (BASE64_KEY.test(trimmed)) {
    const key = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (key.length === KEY_BYTES) return key;
  }
  // Never echo the value: it is (or was meant to be) a secret.
  throw new Error(
    `invalid encryption key: expected 64 hex characters or the base64 encoding of 32 bytes ` +
      `(got ${trimmed.length} characters); generate one with \`openssl rand -hex 32\``,
  );
}

/** A fresh 256-bit key as 64 lowercase hex characters. */
export function generateEncryptionKey(): string {
  return randomBytes(KEY_BYTES).toString('hex');
}
