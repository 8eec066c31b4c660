import type { PayloadStoreConfig } from '../config.js';
import { DatabasePayloadStore, type PayloadStore } from './payload-store.js';

/** The configured store (HOOKRELAY_PAYLOAD_STORE). The S3 client is loaded only when it is used. */
export async function openPayloadStore(config: PayloadStoreConfig): Promise<PayloadStore> {
  if (config.kind === 'database') return new DatabasePayloadStore();
  const { S3PayloadStore } = await import('./s3-payload-store.js');
  return S3PayloadStore.open(config);
}

/**
 * Throws a ConfigError saying how to install the AWS SDK when an s3:// store is configured and the
 * SDK is not installed: it is an optional peer of the package, which a plain `npm install` leaves out.
 * The server calls it before opening the database, so that nothing changes before the refusal.
 */
export async function checkPayloadStoreAvailable(config: PayloadStoreConfig): Promise<void> {
  if (config.kind === 'database') return;
  const { loadS3Sdk } = await import('./s3-payload-store.js');
  await loadS3Sdk();
}
