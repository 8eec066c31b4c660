import { isDuplicateInboundUrl } from '../../db/inbound-endpoints.js';
import { AppError } from '../../errors.js';
import type { AppServices } from '../../services.js';

const duplicateUrl = () =>
  new AppError('DUPLICATE_URL', 'body.url: an inbound endpoint with this url already exists in the project', {
    details: [{ path: 'body.url', message: 'an inbound endpoint with this url already exists in the project' }],
  });

/** Runs a write that may take a URL; the unique index is the only race-free DUPLICATE_URL check. */
export async function mapDuplicateUrl<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isDuplicateInboundUrl(error)) throw duplicateUrl();
    throw error;
  }
}

/**
 * After a write's commit: the endpoints it changed, those whose expired hold on the URL it released
 * included, drop their cached ingest settings in every process.
 */
export async function announceChanged(services: Pick<AppServices, 'inboundEndpointChanged'>, ids: readonly string[]): Promise<void> {
  for (const id of ids) await services.inboundEndpointChanged(id);
}
