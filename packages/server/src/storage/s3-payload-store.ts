import type { S3Client } from '@aws-sdk/client-s3';
import { ConfigError, type S3PayloadStoreConfig } from '../config.js';
import type { Sql } from '../db/database.js';
import { installCommand } from '../install-command.js';
import { PayloadStoreUnavailableError, PayloadUnavailableError, type PayloadStore } from './payload-store.js';

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
          `Install it beside hookrelay-server: ${installCommand([`${S3_SDK_PACKAGE}@3`])}`,
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
}

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
