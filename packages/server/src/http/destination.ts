import { AppError } from '../errors.js';
import { checkDestinationUrl } from '../security/ssrf.js';
import type { AppServices } from '../services.js';

/**
 * SSRF refusal at create/update (docs/api.md, Outbound endpoints); the connect-time guard re-checks
 * on delivery.
 */
export async function assertDestinationAllowed(services: Pick<AppServices, 'config' | 'resolveHost'>, url: string, field = 'url'): Promise<void> {
  const result = await checkDestinationUrl(url, {
    allowPrivateNetworks: services.config.allowPrivateNetworks,
    ...(services.resolveHost ? { resolve: services.resolveHost } : {}),
  });
  if (!result.ok) {
    throw new AppError('INVALID_REQUEST', `body.${field}: ${result.reason}`, { details: [{ path: `body.${field}`, message: result.reason }] });
  }
}
