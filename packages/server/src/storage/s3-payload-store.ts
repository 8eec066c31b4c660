import type { S3Client } from '@aws-sdk/client-s3';
import type { S3PayloadStoreConfig } from '../config.js';
import { ConfigError } from '../errors.js';
import { SERVER_PACKAGE_DIR } from '../version.js';
import type { Sql } from '../db/database.js';
import { installCommand } from '@hookrelay/shared/install-command';
import { Readable } from 'node:stream';
import { newUuidv7 } from '@hookrelay/shared';
import { beginBlobUpload, endBlobUploads } from '../db/blob-uploads.js';
import { BLOB_KEY_PREFIX, isBlobKey, type BlobStore, type BlobUpload, type ByteRange } from './blob-store.js';
import { PayloadStoreUnavailableError, PayloadUnavailableError } from './errors.js';
import type { PayloadStore } from './payload-store.js';

type S3Sdk = typeof import('@aws-sdk/client-s3');

/** DeleteObjects takes at most 1000 keys per request. */
const DELETE_CHUNK = 1000;

export interface S3PayloadStoreOptions {
  /** Requests in flight at once for one putMany/getMany (a 500-webhook batch must not open 500 sockets). */
  concurrency?: number;
  /** TCP connect limit per attempt. */
  connectionTimeoutMs?: number;
  /** Whole request and response limit per attempt. */
  requestTimeoutMs?: number;
  /** Attempts per operation, the first included (the SDK's standard retry with backoff between them). */
  maxAttempts?: number;
  /**
   * Limit for one operation, retries included: ingestion holds its endpoints' row locks while it
   * waits for the store, so a store that accepts connections and never answers must not hold them longer.
   */
  operationTimeoutMs?: number;
}

/** The package the S3 store needs: an optional peer dependency of @hookrelay/server. */
export const S3_SDK_PACKAGE = '@aws-sdk/client-s3';

/** The AWS SDK's S3 client, or a ConfigError with the command that installs it. */
export async function loadS3Sdk(): Promise<S3Sdk> {
  try {
    return await import('@aws-sdk/client-s3');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if ((code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') && String((error as Error).message).includes(S3_SDK_PACKAGE)) {
      throw new ConfigError(
        `HOOKRELAY_PAYLOAD_STORE is an s3:// store, which needs the AWS SDK's ${S3_SDK_PACKAGE}, and it is not installed. ` +
          `Install it beside hookrelay-server: ${installCommand([`${S3_SDK_PACKAGE}@3`], SERVER_PACKAGE_DIR)}`,
      );
    }
    throw error;
  }
}

/**
 * Payloads as objects `${prefix}/${key}` in an S3-compatible bucket (docs/operating.md, Payload
 * storage on S3). The `sql` handles are ignored: a put finishes before the caller's transaction
 * commits, so a committed row always has its object; a rolled-back one may leave an object that
 * nothing references.
 */
export class S3PayloadStore implements PayloadStore {
  readonly kind = 's3';
  private readonly sdk: S3Sdk;
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly concurrency: number;
  private readonly operationTimeoutMs: number;

  /**
   * Loads the SDK (about 70 CommonJS modules) only here: a static import would load it at every
   * start of the bundled server, which hoists an external module's static imports to its top.
   */
  static async open(config: S3PayloadStoreConfig, options: S3PayloadStoreOptions = {}): Promise<S3PayloadStore> {
    return new S3PayloadStore(await loadS3Sdk(), config, options);
  }

  private constructor(sdk: S3Sdk, config: S3PayloadStoreConfig, options: S3PayloadStoreOptions) {
    this.sdk = sdk;
    this.bucket = config.bucket;
    this.prefix = config.prefix;
    this.concurrency = options.concurrency ?? 16;
    this.operationTimeoutMs = options.operationTimeoutMs ?? 10_000;
    this.client = new sdk.S3Client({
      region: config.region,
      ...(config.endpoint !== undefined ? { endpoint: config.endpoint, forcePathStyle: true } : {}),
      ...(config.credentials !== undefined ? { credentials: config.credentials } : {}),
      maxAttempts: options.maxAttempts ?? 3,
      // Checksums only where the API demands them: several S3-compatible stores reject or ignore
      // the newer flexible-checksum headers the SDK would otherwise add to every request.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: {
        connectionTimeout: options.connectionTimeoutMs ?? 2_000,
        requestTimeout: options.requestTimeoutMs ?? 5_000,
        throwOnRequestTimeout: true,
      },
    });
  }

  private objectKey(key: string): string {
    return this.prefix === '' ? key : `${this.prefix}/${key}`;
  }

  private deadline(): { abortSignal: AbortSignal } {
    return { abortSignal: AbortSignal.timeout(this.operationTimeoutMs) };
  }

  async putMany(_sql: Sql, items: readonly { key: string; data: Uint8Array }[]): Promise<void> {
    try {
      await eachBounded(items, this.concurrency, async (item) => {
        await this.client.send(
          new this.sdk.PutObjectCommand({
            Bucket: this.bucket,
            Key: this.objectKey(item.key),
            Body: item.data,
            ContentLength: item.data.byteLength,
            ContentType: 'application/octet-stream',
          }),
          this.deadline(),
        );
      });
    } catch (error) {
      // Nothing may be committed without its payload: the caller's transaction rolls back and the
      // sender is told to retry.
      throw new PayloadStoreUnavailableError(error);
    }
  }

  async get(_sql: Sql, key: string): Promise<Buffer | undefined> {
    try {
      const response = await this.client.send(new this.sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }), this.deadline());
      if (response.Body === undefined) return Buffer.alloc(0);
      const bytes = await response.Body.transformToByteArray();
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    } catch (error) {
      if (error instanceof this.sdk.NoSuchKey || (error as { name?: unknown }).name === 'NoSuchKey') return undefined;
      throw new PayloadUnavailableError(`payload ${key} could not be read`, { cause: error });
    }
  }

  async getMany(sql: Sql, keys: readonly string[]): Promise<Map<string, Buffer>> {
    const found = new Map<string, Buffer>();
    await eachBounded([...new Set(keys)], this.concurrency, async (key) => {
      const bytes = await this.get(sql, key);
      if (bytes !== undefined) found.set(key, bytes);
    });
    return found;
  }

  async deleteMany(_sql: Sql, keys: readonly string[]): Promise<void> {
    for (let start = 0; start < keys.length; start += DELETE_CHUNK) {
      const chunk = keys.slice(start, start + DELETE_CHUNK);
      const response = await this.client.send(
        new this.sdk.DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: chunk.map((key) => ({ Key: this.objectKey(key) })), Quiet: true },
        }),
        this.deadline(),
      );
      // DeleteObjects answers 200 even when some keys failed; the sweeper's transaction must then
      // roll back so that those payload keys are tried again on its next run.
      const failed = response.Errors ?? [];
      if (failed.length > 0) {
        const first = failed[0]!;
        throw new Error(`payload store: ${failed.length} of ${chunk.length} deletes failed (first: ${first.Key ?? '?'}: ${first.Code ?? ''} ${first.Message ?? ''})`);
      }
    }
  }

  async close(): Promise<void> {
    this.client.destroy();
  }

  /**
   * Large bodies in the same bucket, as multipart uploads written as they arrive
   * (storage/blob-store.ts): the pending record in `sql` first, then a part each time 8 MiB have
   * come (S3 takes parts of at least 5 MiB but the last), completed before the answer.
   */
  blobStore(sql: Sql, logError: (fields: object, message: string) => void): BlobStore {
    const store = this;
    const { sdk, client, bucket } = this;
    const objectKey = (key: string) => this.objectKey(key);
    const deadline = () => this.deadline();
    return {
      kind: 's3',
      async begin(): Promise<BlobUpload> {
        const key = `${BLOB_KEY_PREFIX}${newUuidv7()}`;
        await beginBlobUpload(sql, key);
        let uploadId: string;
        try {
          const created = await client.send(new sdk.CreateMultipartUploadCommand({ Bucket: bucket, Key: objectKey(key), ContentType: 'application/octet-stream' }), deadline());
          uploadId = created.UploadId!;
        } catch (error) {
          await endBlobUploads(sql, [key]).catch(() => undefined);
          throw new PayloadStoreUnavailableError(error);
        }
        const parts: { ETag: string; PartNumber: number }[] = [];
        let pending: Buffer[] = [];
        let pendingBytes = 0;
        const sendPart = async () => {
          const body = Buffer.concat(pending, pendingBytes);
          pending = [];
          pendingBytes = 0;
          const PartNumber = parts.length + 1;
          try {
            const sent = await client.send(
              new sdk.UploadPartCommand({ Bucket: bucket, Key: objectKey(key), UploadId: uploadId, PartNumber, Body: body, ContentLength: body.length }),
              deadline(),
            );
            parts.push({ ETag: sent.ETag!, PartNumber });
          } catch (error) {
            throw new PayloadStoreUnavailableError(error);
          }
        };
        return {
          key,
          write: async (chunk) => {
            pending.push(chunk);
            pendingBytes += chunk.length;
            if (pendingBytes >= S3_PART_BYTES) await sendPart();
          },
          finish: async () => {
            if (pendingBytes > 0 || parts.length === 0) await sendPart();
            try {
              await client.send(
                new sdk.CompleteMultipartUploadCommand({ Bucket: bucket, Key: objectKey(key), UploadId: uploadId, MultipartUpload: { Parts: parts } }),
                deadline(),
              );
            } catch (error) {
              throw new PayloadStoreUnavailableError(error);
            }
          },
          abort: async () => {
            pending = [];
            pendingBytes = 0;
            await client.send(new sdk.AbortMultipartUploadCommand({ Bucket: bucket, Key: objectKey(key), UploadId: uploadId }), deadline()).catch(() => undefined);
            await client.send(new sdk.DeleteObjectCommand({ Bucket: bucket, Key: objectKey(key) }), deadline()).catch(() => undefined);
            await endBlobUploads(sql, [key]).catch(() => undefined);
          },
        };
      },
      read(key: string, size?: number, range?: ByteRange): Readable {
        const unavailable = (what: string, cause?: unknown) => {
          logError({ key, object: objectKey(key), ...(cause instanceof Error ? { err: cause } : {}) }, `payload object ${objectKey(key)} ${what}: its message is answered with body_error payload_unavailable`);
          return new PayloadUnavailableError(`payload ${key} could not be read`, cause === undefined ? undefined : { cause });
        };
        return Readable.from(
          (async function* () {
            let response;
            try {
              response = await client.send(
                new sdk.GetObjectCommand({ Bucket: bucket, Key: objectKey(key), ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) }),
                deadline(),
              );
            } catch (error) {
              const missing = error instanceof sdk.NoSuchKey || (error as { name?: unknown }).name === 'NoSuchKey';
              throw unavailable(missing ? 'is missing' : 'could not be read', error);
            }
            const whole = range ? Number(/\/(\d+)$/.exec(response.ContentRange ?? '')?.[1] ?? NaN) : response.ContentLength;
            if (size !== undefined && whole !== size) throw unavailable(`holds ${String(whole)} bytes, not the ${size} its message has`);
            try {
              for await (const piece of response.Body as AsyncIterable<Uint8Array>) yield Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
            } catch (error) {
              throw unavailable('could not be read', error);
            }
          })(),
          { objectMode: false },
        );
      },
      deleteMany: (tx, keys) => store.deleteMany(tx, keys.filter(isBlobKey)),
    };
  }
}

/** Parts of a large body's multipart upload: S3 wants at least 5 MiB for every part but the last. */
const S3_PART_BYTES = 8 * 1024 * 1024;

/**
 * Runs `fn` over `items`, at most `limit` at a time. On the first failure no new item starts; the
 * ones in flight are waited for, so that nothing is still writing once the caller has given up.
 */
async function eachBounded<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const lane = async () => {
    while (failure === undefined && next < items.length) {
      const item = items[next++]!;
      try {
        await fn(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  if (failure !== undefined) throw failure.error;
}
