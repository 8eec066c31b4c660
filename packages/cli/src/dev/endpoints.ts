import type { HmacScheme, InboundEndpointCreateIn, InboundEndpointUpdateIn, SampleProvider } from '@hookrelay/shared';
import { HookrelayApiError, type HookrelayClient } from '@hookrelay/shared/client';
import { SCHEMES_WITHOUT_PRESET_HEADER } from '@hookrelay/shared/constants';
import { SAMPLE_SIGNATURE } from '@hookrelay/shared/samples';
import type { VerifySetting } from '../flags/verify.js';
import { writeDevState, type DevState } from './state.js';

export const DEV_ENDPOINT_NAME = 'hookrelay dev';

/** An endpoint dev forwards from. */
export interface DevEndpoint {
  /** The provider it verifies (`--verify`); null for the one that verifies nothing. */
  provider: SampleProvider | null;
  id: string;
  ingestUrl: string;
  latestMessageId: string | null;
}

/**
 * How the endpoint of `provider` verifies: HMAC in the provider's scheme with the given secret, as
 * the samples route signs (`SAMPLE_SIGNATURE`), and nothing else, so that `trigger` can sign.
 */
function verification({ provider, secret }: VerifySetting): { create: Partial<InboundEndpointCreateIn>; update: InboundEndpointUpdateIn } {
  const { scheme, header } = SAMPLE_SIGNATURE[provider];
  const hmacScheme = scheme as HmacScheme;
  // A generic scheme has no header of its own: the provider's is named (Shopify's, on base64).
  const ownHeader = SCHEMES_WITHOUT_PRESET_HEADER.has(hmacScheme) ? header : undefined;
  const common = { verify_hmac: true, hmac_scheme: hmacScheme, hmac_secret: secret, verify_static_token: false, verify_ip_allowlist: false };
  return {
    create: { ...common, ...(ownHeader === undefined ? {} : { hmac_header_name: ownHeader }) },
    // "" clears a header setting left from an earlier use: the preset's header, no timestamp header.
    update: { ...common, hmac_header_name: ownHeader ?? '', timestamp_header_name: '' },
  };
}

/**
 * The stored cli-mode endpoint if it still exists (and, with `verify`, set to verify with that
 * secret, which may have changed since), else null: it was deleted, or switched to forward mode.
 */
async function reuse(
  client: HookrelayClient,
  id: string | undefined,
  verify: VerifySetting | null,
  warning: (text: string) => void,
): Promise<DevEndpoint | null> {
  if (id === undefined) return null;
  let data;
  try {
    ({ data } = await client.inboundEndpoints.get(id));
  } catch (error) {
    if (error instanceof HookrelayApiError && error.code === 'ENDPOINT_NOT_FOUND') return null;
    throw error;
  }
  if (data.mode !== 'cli') {
    warning(`the dev endpoint ${data.id} was switched to forward mode; creating a new cli-mode endpoint`);
    return null;
  }
  if (verify !== null) await client.inboundEndpoints.update(data.id, verification(verify).update);
  return { provider: verify?.provider ?? null, id: data.id, ingestUrl: data.ingest_url, latestMessageId: data.latest_message_id ?? null };
}

async function create(client: HookrelayClient, verify: VerifySetting | null): Promise<DevEndpoint> {
  const { data } = await client.inboundEndpoints.create({
    name: verify === null ? DEV_ENDPOINT_NAME : `${DEV_ENDPOINT_NAME} ${verify.provider}`,
    mode: 'cli',
    description: verify === null ? 'created by `hookrelay dev`' : `created by \`hookrelay dev --verify ${verify.provider}=…\``,
    ...(verify === null ? {} : verification(verify).create),
  });
  // A new endpoint has no messages yet.
  return { provider: verify?.provider ?? null, id: data.id, ingestUrl: data.ingest_url, latestMessageId: null };
}

/**
 * Dev's endpoints, reused from dev.json where they still exist, else created (and remembered for the
 * next run): without `verify`, the one that verifies nothing; with it, one per provider, in its order.
 */
export async function devEndpoints(
  client: HookrelayClient,
  dataDir: string,
  state: DevState,
  verify: readonly VerifySetting[],
  warning: (text: string) => void,
): Promise<DevEndpoint[]> {
  if (verify.length === 0) {
    const endpoint = (await reuse(client, state.inbound_endpoint_id, null, warning)) ?? (await create(client, null));
    if (endpoint.id !== state.inbound_endpoint_id) await writeDevState(dataDir, { ...state, inbound_endpoint_id: endpoint.id });
    return [endpoint];
  }
  const endpoints: DevEndpoint[] = [];
  const ids: Partial<Record<SampleProvider, string>> = { ...state.verify_endpoints };
  let changed = false;
  for (const setting of verify) {
    const endpoint = (await reuse(client, ids[setting.provider], setting, warning)) ?? (await create(client, setting));
    if (ids[setting.provider] !== endpoint.id) {
      ids[setting.provider] = endpoint.id;
      changed = true;
    }
    endpoints.push(endpoint);
  }
  if (changed) await writeDevState(dataDir, { ...state, verify_endpoints: ids });
  return endpoints;
}
