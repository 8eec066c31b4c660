import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SampleProvider } from '@hookrelay/shared';
import { API_KEY_PATTERN, isUuid } from '@hookrelay/shared/ids';
import { PROVIDERS } from '@hookrelay/shared/providers';
import { CONFIG_DIR_MODE, CONFIG_FILE_MODE } from '../config.js';
import { CliErrorCode, CliFailure } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import { DEV_STATE_FILE, SERVER_BOOTSTRAP_KEY_FILE } from './layout.js';

export { DEV_STATE_FILE, SERVER_BOOTSTRAP_KEY_FILE, SERVER_DATABASE_DIR } from './layout.js';

/**
 * What `hookrelay dev` keeps in its data dir beside the embedded server's database, so that a
 * restart reuses the same API key (the server's bootstrap key) and the same cli-mode endpoint, and
 * so the same ingest URL.
 */
export interface DevState {
  api_key?: string;
  /** The endpoint that verifies nothing (dev without --verify). */
  inbound_endpoint_id?: string;
  /** `--verify`: each provider's endpoint, kept apart from the one above so that both are reused. */
  verify_endpoints?: Partial<Record<SampleProvider, string>>;
}

export function devStatePath(dataDir: string): string {
  return join(dataDir, DEV_STATE_FILE);
}

/** Keeps what is well formed: a bad field is forgotten (a new endpoint is made), never fatal. */
export function parseDevState(text: string): DevState {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return {};
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return {};
  const raw = parsed as Record<string, unknown>;
  const state: DevState = {};
  if (typeof raw.api_key === 'string' && API_KEY_PATTERN.test(raw.api_key)) state.api_key = raw.api_key;
  if (typeof raw.inbound_endpoint_id === 'string' && isUuid(raw.inbound_endpoint_id)) state.inbound_endpoint_id = raw.inbound_endpoint_id;
  const ids = raw.verify_endpoints;
  if (typeof ids === 'object' && ids !== null && !Array.isArray(ids)) {
    const kept: Partial<Record<SampleProvider, string>> = {};
    // Only the known providers' names are read, so no name from the file becomes a key here.
    for (const provider of PROVIDERS) {
      const id = Object.hasOwn(ids, provider) ? (ids as Record<string, unknown>)[provider] : undefined;
      if (typeof id === 'string' && isUuid(id)) kept[provider] = id;
    }
    if (Object.keys(kept).length > 0) state.verify_endpoints = kept;
  }
  return state;
}

export async function readDevState(dataDir: string): Promise<DevState> {
  try {
    return parseDevState(await readFile(devStatePath(dataDir), 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new CliFailure(CliErrorCode.CONFIG_ERROR, `cannot read ${devStatePath(dataDir)}: ${(error as Error).message}`, ExitCode.GENERIC);
  }
}

/** Mode 0600 (it holds an API key), written through a temporary file and a rename. */
export async function writeDevState(dataDir: string, state: DevState): Promise<void> {
  const path = devStatePath(dataDir);
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    await mkdir(dataDir, { recursive: true, mode: CONFIG_DIR_MODE });
    await writeFile(temporary, `${JSON.stringify(state, null, 2)}\n`, { mode: CONFIG_FILE_MODE });
    await chmod(temporary, CONFIG_FILE_MODE);
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw new CliFailure(CliErrorCode.CONFIG_ERROR, `cannot write ${path}: ${(error as Error).message}`, ExitCode.GENERIC);
  }
}

/** The key the server wrote when it made one itself (a data dir first used by `hookrelay-server start`). */
export async function readServerBootstrapKey(dataDir: string): Promise<string | undefined> {
  try {
    const key = (await readFile(join(dataDir, SERVER_BOOTSTRAP_KEY_FILE), 'utf8')).trim();
    return API_KEY_PATTERN.test(key) ? key : undefined;
  } catch {
    return undefined;
  }
}
