import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SampleProvider } from '@hookrelay/shared';
import { isUuid } from '@hookrelay/shared/ids';
import { isProvider, PROVIDERS } from '@hookrelay/shared/providers';
import { CONFIG_DIR_MODE, CONFIG_FILE_MODE } from '../config.js';
import { usageFailure } from '../errors.js';
import { DEV_STATE_FILE } from './layout.js';

/**
 * The marker a running `hookrelay dev` leaves in the CLI's configuration directory, so that other
 * commands in another terminal (`trigger`, `open`, `inbound …`) use its server without flags
 * (docs/cli.md, Settings). It names the dev process, the server's address, the data dir, whose
 * dev.json holds the key, and dev's endpoints; it counts only while that process is alive, and dev
 * removes it on exit.
 */
export const RUNNING_DEV_FILE = 'dev-running.json';

/** One endpoint dev forwards from: its provider with --verify, null for the one that verifies nothing. */
export interface RunningDevEndpoint {
  provider: SampleProvider | null;
  inbound_endpoint_id: string;
}

export interface RunningDevMarker {
  pid: number;
  api_url: string;
  data_dir: string;
  /** The first of `endpoints`. */
  inbound_endpoint_id: string;
  endpoints: RunningDevEndpoint[];
}

/** The running dev server as the settings use it. */
export interface RunningDev {
  pid: number;
  apiUrl: string;
  apiKey: string;
  inboundEndpointId: string;
  endpoints: RunningDevEndpoint[];
  dataDir: string;
}

export function runningDevPath(configDir: string): string {
  return join(configDir, RUNNING_DEV_FILE);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // ESRCH: gone. EPERM: another user's process holds that pid now, not this user's dev.
    return false;
  }
}

function parseMarker(text: string): RunningDevMarker | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof raw !== 'object' || raw === null) return undefined;
  const { pid, api_url: apiUrl, data_dir: dataDir, inbound_endpoint_id: endpointId, endpoints } = raw as Record<string, unknown>;
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) return undefined;
  if (typeof apiUrl !== 'string' || !/^http:\/\/127\.0\.0\.1:\d+$/u.test(apiUrl)) return undefined;
  if (typeof dataDir !== 'string' || typeof endpointId !== 'string') return undefined;
  return { pid, api_url: apiUrl, data_dir: dataDir, inbound_endpoint_id: endpointId, endpoints: markerEndpoints(endpoints, endpointId) };
}

/** The well-formed entries of `endpoints`; a marker without them (an older dev) has its one endpoint. */
function markerEndpoints(value: unknown, endpointId: string): RunningDevEndpoint[] {
  if (!Array.isArray(value)) return [{ provider: null, inbound_endpoint_id: endpointId }];
  const kept: RunningDevEndpoint[] = [];
  // One endpoint per provider and the unverified one at most: a longer list is not dev's.
  for (const entry of value.slice(0, PROVIDERS.length + 1)) {
    if (typeof entry !== 'object' || entry === null) continue;
    const { provider, inbound_endpoint_id: id } = entry as Record<string, unknown>;
    if (typeof id !== 'string' || !isUuid(id)) continue;
    if (provider === null || (typeof provider === 'string' && isProvider(provider))) kept.push({ provider, inbound_endpoint_id: id });
  }
  return kept;
}

/**
 * The endpoint of a running dev that `trigger PROVIDER EVENT` sends to: the provider's own
 * (`--verify`), else dev's one endpoint that verifies nothing; undefined when dev verifies other
 * providers only.
 */
export function runningDevEndpoint(dev: Pick<RunningDev, 'endpoints'>, provider: SampleProvider): string | undefined {
  return (dev.endpoints.find((endpoint) => endpoint.provider === provider) ?? dev.endpoints.find((endpoint) => endpoint.provider === null))?.inbound_endpoint_id;
}

/**
 * `runningDevEndpoint`, or why there is none: no dev runs (`missing` says what was left out), or
 * it verifies other providers only.
 */
export function requireRunningDevEndpoint(dev: Pick<RunningDev, 'endpoints'> | undefined, provider: SampleProvider, missing: { message: string; hint: string }): string {
  if (dev === undefined) throw usageFailure(missing.message, missing.hint);
  const id = runningDevEndpoint(dev, provider);
  if (id === undefined) {
    const verified = dev.endpoints.flatMap((endpoint) => (endpoint.provider === null ? [] : [endpoint.provider]));
    throw usageFailure(`the running hookrelay dev has no ${provider} endpoint (it verifies ${verified.join(', ')})`, `Start dev with --verify ${provider}=SECRET as well, or give an endpoint id.`);
  }
  return id;
}

/**
 * The running dev server, or undefined: no marker, a marker left by a process that is gone (a
 * crash, SIGKILL), or a data dir without its key. Never fails: a bad marker only means "none".
 */
export async function readRunningDev(configDir: string): Promise<RunningDev | undefined> {
  let text: string;
  try {
    text = await readFile(runningDevPath(configDir), 'utf8');
  } catch {
    return undefined;
  }
  const marker = parseMarker(text);
  if (marker === undefined || !alive(marker.pid)) return undefined;
  let apiKey: unknown;
  try {
    apiKey = (JSON.parse(await readFile(join(marker.data_dir, DEV_STATE_FILE), 'utf8')) as { api_key?: unknown } | null)?.api_key;
  } catch {
    return undefined;
  }
  if (typeof apiKey !== 'string' || apiKey === '') return undefined;
  return { pid: marker.pid, apiUrl: marker.api_url, apiKey, inboundEndpointId: marker.inbound_endpoint_id, endpoints: marker.endpoints, dataDir: marker.data_dir };
}

/** Written by dev once its server listens and its endpoint exists (mode 0600, through a rename). */
export async function writeRunningDev(configDir: string, marker: RunningDevMarker): Promise<void> {
  await mkdir(configDir, { recursive: true, mode: CONFIG_DIR_MODE });
  const path = runningDevPath(configDir);
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(marker)}\n`, { mode: CONFIG_FILE_MODE });
  await chmod(temporary, CONFIG_FILE_MODE);
  await rename(temporary, path);
}

/** Removed by dev on exit, only while it is still this process's (a later dev may have replaced it). */
export async function removeRunningDev(configDir: string, pid: number): Promise<void> {
  const path = runningDevPath(configDir);
  try {
    const marker = parseMarker(await readFile(path, 'utf8'));
    if (marker !== undefined && marker.pid !== pid) return;
    await rm(path, { force: true });
  } catch {
    // Gone already.
  }
}
