import type { SecretBox } from '../security/crypto.js';

const SECRET_CACHE_SIZE = 1000;

/**
 * Opened signing secrets by their sealed text, so that a delivery's signature costs no AES-GCM
 * open per attempt. Bounded: past its size the oldest entry goes.
 */
export class SecretCache {
  private readonly opened = new Map<string, string>();

  constructor(
    private readonly secretBox: SecretBox,
    private readonly size = SECRET_CACHE_SIZE,
  ) {}

  open(sealed: string): string {
    let plain = this.opened.get(sealed);
    if (plain === undefined) {
      plain = this.secretBox.decrypt(sealed);
      if (this.opened.size >= this.size) this.opened.delete(this.opened.keys().next().value!);
      this.opened.set(sealed, plain);
    }
    return plain;
  }
}
