import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';

interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
// s3rver ships no types.
const S3rver = createRequire(import.meta.url)('s3rver') as new (options: Record<string, unknown>) => S3rverInstance;

/** s3rver checks signatures against these. */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export interface TestS3 {
  endpoint: string;
  bucket: string;
  /** The environment that points the server's payload store at this bucket under `prefix`. */
  env(prefix: string): Record<string, string>;
  /** Object keys under a prefix (the whole bucket when omitted). */
  list(prefix?: string): Promise<string[]>;
  /** An object's bytes, or undefined when there is none. */
  read(key: string): Promise<Buffer | undefined>;
  stop(): Promise<void>;
}

/** An S3-protocol server on loopback (port 0) in a temporary directory, with one empty bucket. */
export async function startTestS3(bucket = 'hookrelay-test'): Promise<TestS3> {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-s3rver-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({ endpoint, forcePathStyle: true, region: 'us-east-1', credentials: S3RVER_CREDENTIALS });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  return {
    endpoint,
    bucket,
    env: (prefix) => ({
      HOOKRELAY_PAYLOAD_STORE: `s3://${bucket}/${prefix}`,
      AWS_ENDPOINT_URL: endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
    }),
    async list(prefix) {
      const keys: string[] = [];
      let token: string | undefined;
      for (let page = 0; page < 100; page++) {
        const res = await client.send(new ListObjectsV2Command({ Bucket: bucket, ...(prefix ? { Prefix: prefix } : {}), ...(token ? { ContinuationToken: token } : {}) }));
        keys.push(...(res.Contents ?? []).map((o) => o.Key!));
        if (!res.IsTruncated) break;
        token = res.NextContinuationToken;
      }
      return keys.sort();
    },
    async read(key) {
      try {
        const res = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        return Buffer.from(await res.Body!.transformToByteArray());
      } catch (error) {
        if ((error as { name?: string }).name === 'NoSuchKey') return undefined;
        throw error;
      }
    },
    async stop() {
      client.destroy();
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** A loopback port with nothing listening on it (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A loopback server that accepts connections and never answers: a hung store. */
export async function silentServer(): Promise<{ endpoint: string; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
