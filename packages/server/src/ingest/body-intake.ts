import { createHash, createHmac, type KeyObject } from 'node:crypto';
import { REJECTION_BODY_PREFIX_BYTES } from '@hookrelay/shared';
import type { RequestPayload } from 'fastify';
import type { BlobStore, BlobUpload } from '../storage/blob-store.js';
import type { MacInput } from './mac-inputs.js';

/**
 * A webhook body as ingestion holds it (docs/architecture.md, Storage): small ones in one buffer,
 * stored in the commit of their message; large ones (`stored`) written to the blob store as they
 * arrived, hashed, HMAC'd and scanned for their event type on the way, and never joined in memory.
 */
export type IngestBody =
  | { kind: 'inline'; bytes: Buffer }
  | {
      kind: 'stored';
      upload: BlobUpload;
      size: number;
      sha256: string;
      /** The first bytes, what a refusal keeps of a body. */
      head: Buffer;
      macOf: (key: KeyObject, prefix: string | null) => Buffer;
      eventType: string | null;
    };

export function isIngestBody(value: unknown): value is IngestBody {
  return typeof value === 'object' && value !== null && Object.hasOwn(value, 'kind') && ((value as IngestBody).kind === 'inline' || (value as IngestBody).kind === 'stored');
}

export interface IntakePlan {
  blobs: BlobStore;
  /** Bodies up to this size stay in memory; a larger one streams from the byte it passes it. */
  streamAbove: number;
  macInputs: MacInput[];
  eventType: { write(chunk: Uint8Array): void; end(): string | null };
}

/**
 * Reads a request body: into one buffer while it stays at most `plan.streamAbove` bytes (and when
 * there is no plan), otherwise into a blob upload, which is durable once this resolves. A failure
 * of the request's stream or of the store removes what was written.
 */
export function takeBody(payload: RequestPayload, plan: IntakePlan | null): Promise<IngestBody> {
  return new Promise((resolve, reject) => {
    const held: Buffer[] = [];
    let size = 0;
    let upload: BlobUpload | undefined;
    let starting: Promise<void> | undefined;
    let failed = false;
    const sha = createHash('sha256');
    const macs: { input: MacInput; hmac: ReturnType<typeof createHmac> }[] = [];
    let head: Buffer[] = [];
    let headBytes = 0;

    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      payload.destroy?.();
      const abandoned = upload;
      if (abandoned) void abandoned.abort();
      reject(error);
    };
    const digest = (chunk: Buffer) => {
      sha.update(chunk);
      for (const m of macs) m.hmac.update(chunk);
      plan!.eventType.write(chunk);
      if (headBytes < REJECTION_BODY_PREFIX_BYTES) {
        const part = chunk.subarray(0, REJECTION_BODY_PREFIX_BYTES - headBytes);
        head.push(Buffer.from(part));
        headBytes += part.length;
      }
    };
    // From the byte past `streamAbove`: the held bytes go to a new upload first, then each chunk as it comes.
    const startStreaming = async () => {
      for (const input of plan!.macInputs) {
        const hmac = createHmac('sha256', input.key);
        if (input.prefix !== null) hmac.update(input.prefix, 'latin1');
        macs.push({ input, hmac });
      }
      upload = await plan!.blobs.begin();
      for (const chunk of held) {
        digest(chunk);
        await upload.write(chunk);
      }
      held.length = 0;
    };

    payload.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (upload === undefined && starting === undefined && (plan === null || size <= plan.streamAbove)) {
        held.push(chunk);
        return;
      }
      payload.pause();
      if (starting === undefined) {
        held.push(chunk);
        starting = startStreaming();
        starting.then(() => payload.resume(), fail);
        return;
      }
      starting
        .then(async () => {
          digest(chunk);
          await upload!.write(chunk);
        })
        .then(() => payload.resume(), fail);
    });
    payload.on('error', fail);
    payload.on('end', () => {
      if (failed) return;
      if (starting === undefined) {
        resolve({ kind: 'inline', bytes: held.length === 1 ? held[0]! : Buffer.concat(held, size) });
        return;
      }
      starting
        .then(() => upload!.finish())
        .then(() => {
          const digests = macs.map((m) => ({ input: m.input, value: m.hmac.digest() }));
          const headBuffer = Buffer.concat(head);
          head = [];
          resolve({
            kind: 'stored',
            upload: upload!,
            size,
            sha256: sha.digest('hex'),
            head: headBuffer,
            macOf: (key, prefix) => {
              const found = digests.find((d) => d.input.key === key && d.input.prefix === prefix);
              // The verifier refuses the request on this (as misconfigured): a guess must never pass.
              if (found === undefined) throw new Error('an HMAC was asked of a streamed body that was not computed as it arrived');
              return found.value;
            },
            eventType: plan!.eventType.end(),
          });
        }, fail);
    });
  });
}
