import { parseCidr } from './cidr.js';

/** A setting that turns a protection off, and what that allows, in the words of the start's warning. */
export interface RiskySetting {
  setting: string;
  allows: string;
}

/**
 * The settings of a configuration that open the server to more than their names suggest: a trusted
 * proxy block that holds every address (so every client is a "proxy"), and deliveries to private
 * networks. The start logs one warning for each.
 */
export function riskySettings(config: { readonly trustedProxies: readonly string[]; readonly allowPrivateNetworks: boolean }): RiskySetting[] {
  const risky: RiskySetting[] = [];
  const everything = config.trustedProxies.filter((block) => {
    const parsed = parseCidr(block);
    return 'range' in parsed && parsed.range[1] === 0;
  });
  if (everything.length > 0) {
    risky.push({
      setting: 'HOOKRELAY_TRUSTED_PROXIES',
      allows:
        `HOOKRELAY_TRUSTED_PROXIES holds ${everything.join(', ')}, which trusts every peer as a proxy: any client can choose the address ` +
        'IP allowlists, the API rate limit and the logs see, by sending X-Forwarded-For or Forwarded. Name only your proxies',
    });
  }
  if (config.allowPrivateNetworks) {
    risky.push({
      setting: 'HOOKRELAY_ALLOW_PRIVATE_NETWORKS',
      allows:
        'HOOKRELAY_ALLOW_PRIVATE_NETWORKS is on: endpoints may deliver to loopback, private and link-local addresses ' +
        '(this host, its internal network, cloud metadata services), and any API key can point one there. For local development and tests only',
    });
  }
  return risky;
}
