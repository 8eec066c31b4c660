import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { CliErrorCode, CliFailure, usageFailure } from './errors.js';
import { ExitCode } from './exit-codes.js';

/**
 * The environment as the CLI sees it. It is handed in (never read from the process here) so that
 * resolution is a pure function of its inputs and tests can build any environment.
 */
export type Env = Readonly<Record<string, string | undefined>>;

export const DEFAULT_API_URL = 'http://127.0.0.1:8787';
export const DEFAULT_PROFILE = 'default';
export const CONFIG_FILE_NAME = 'config.json';
export const CONFIG_FILE_MODE = 0o600;
export const CONFIG_DIR_MODE = 0o700;

export interface StoredProfile {
  api_url?: string;
  api_key?: string;
}

/** The shape of `config.json`. */
export interface ConfigFile {
  current_profile?: string;
  profiles: Record<string, StoredProfile>;
}

/** Where a resolved setting came from: shown by `whoami` and `config list`. */
export type SettingSource = 'flag' | 'env' | 'dev' | 'profile' | 'default';

/** A `hookrelay dev` running for this user (src/dev/running.ts): its server's address and key. */
export interface RunningDevSettings {
  apiUrl: string;
  apiKey: string;
}

export interface ResolvedSettings {
  /** The profile read (and written by login/logout). */
  profile: string;
  profileSource: SettingSource;
  apiUrl: string;
  apiUrlSource: SettingSource;
  apiKey: string | undefined;
  apiKeySource: SettingSource | undefined;
}

export interface SettingFlags {
  'api-url'?: string | undefined;
  'api-key'?: string | undefined;
  profile?: string | undefined;
}

/** An empty string in the environment means "not set", as in most shells' `VAR= cmd` idiom. */
function envValue(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}

/**
 * `$HOOKRELAY_CONFIG_DIR`, else `$XDG_CONFIG_HOME/hookrelay`, else `~/.config/hookrelay`.
 * `homeDir` is the fallback home when `HOME` is unset.
 */
export function configDirectory(env: Env, homeDir: string): string {
  const explicit = envValue(env, 'HOOKRELAY_CONFIG_DIR');
  if (explicit !== undefined) return explicit;
  const xdg = envValue(env, 'XDG_CONFIG_HOME');
  if (xdg !== undefined) return join(xdg, 'hookrelay');
  return join(envValue(env, 'HOME') ?? homeDir, '.config', 'hookrelay');
}

export function configFilePath(env: Env, homeDir: string): string {
  return join(configDirectory(env, homeDir), CONFIG_FILE_NAME);
}

/**
 * The stored profile `name`, or undefined: own entries only, so a profile called `constructor` or
 * `__proto__` is looked up like any other name and never finds something inherited.
 */
export function storedProfile(config: ConfigFile, name: string): StoredProfile | undefined {
  return Object.hasOwn(config.profiles, name) ? config.profiles[name] : undefined;
}

export function emptyConfig(): ConfigFile {
  return { profiles: {} };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Keep what is well formed and drop the rest, so one bad field does not lock a user out. */
export function parseConfigFile(text: string, path: string): ConfigFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new CliFailure(
      CliErrorCode.CONFIG_ERROR,
      `${path} is not valid JSON: ${(error as Error).message}`,
      ExitCode.GENERIC,
      'Fix or delete the file, then run `hookrelay login` again.',
    );
  }
  if (!isRecord(parsed)) {
    throw new CliFailure(CliErrorCode.CONFIG_ERROR, `${path} must hold a JSON object`, ExitCode.GENERIC, 'Fix or delete the file.');
  }
  const config = emptyConfig();
  if (typeof parsed.current_profile === 'string' && parsed.current_profile !== '') {
    config.current_profile = parsed.current_profile;
  }
  if (isRecord(parsed.profiles)) {
    for (const [name, raw] of Object.entries(parsed.profiles)) {
      if (!isRecord(raw)) continue;
      const profile: StoredProfile = {};
      if (typeof raw.api_url === 'string' && raw.api_url !== '') profile.api_url = raw.api_url;
      if (typeof raw.api_key === 'string' && raw.api_key !== '') profile.api_key = raw.api_key;
      // A data property even for the name `__proto__`, which assignment would take as the prototype.
      Object.defineProperty(config.profiles, name, { value: profile, writable: true, enumerable: true, configurable: true });
    }
  }
  return config;
}

/** A missing file is an empty configuration: env-only use (CI) needs no file at all. */
export async function readConfigFile(path: string): Promise<ConfigFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return emptyConfig();
    throw new CliFailure(CliErrorCode.CONFIG_ERROR, `cannot read ${path}: ${(error as Error).message}`, ExitCode.GENERIC);
  }
  return parseConfigFile(text, path);
}

/**
 * Write the file with mode 0600 (it holds API keys) inside a 0700 directory. The content goes to a
 * temporary file first and is renamed over the old one, so a crash never leaves half a file.
 */
export async function writeConfigFile(path: string, config: ConfigFile): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true, mode: CONFIG_DIR_MODE });
  const temporary = `${path}.${process.pid}.tmp`;
  const text = `${JSON.stringify(config, null, 2)}\n`;
  try {
    await writeFile(temporary, text, { mode: CONFIG_FILE_MODE });
    // The mode given to writeFile passes through the umask; chmod states it exactly.
    await chmod(temporary, CONFIG_FILE_MODE);
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw new CliFailure(CliErrorCode.CONFIG_ERROR, `cannot write ${path}: ${(error as Error).message}`, ExitCode.GENERIC);
  }
}

export const PROFILE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function assertProfileName(name: string): void {
  if (!PROFILE_NAME_PATTERN.test(name)) {
    throw usageFailure(
      `invalid profile name "${name}"`,
      'A profile name is 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit.',
    );
  }
}

export function assertApiUrl(url: string, source: SettingSource): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw usageFailure(`invalid API URL "${url}" (from ${describeSource(source)})`, 'Give a full address such as http://127.0.0.1:8787.');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw usageFailure(`invalid API URL "${url}" (from ${describeSource(source)}): only http and https are supported`);
  }
}

export function describeSource(source: SettingSource): string {
  switch (source) {
    case 'flag':
      return 'a flag';
    case 'env':
      return 'the environment';
    case 'dev':
      return 'the running hookrelay dev';
    case 'profile':
      return 'the stored profile';
    case 'default':
      return 'the default';
  }
}

/**
 * Precedence, for each setting on its own: flag, then environment, then a running `hookrelay dev`,
 * then the selected profile, then the default. The profile itself is chosen by `--profile`, then
 * `HOOKRELAY_PROFILE`, then the file's `current_profile`, then `default`.
 *
 * A running dev server gives its address and its key as a pair, and only when no API address comes
 * from a flag or the environment and no profile is named by `--profile` or `HOOKRELAY_PROFILE`
 * (asking for a profile, or an address, means "not the dev server"); a key from a flag or the
 * environment still wins over its key.
 */
export function resolveSettings(flags: SettingFlags, env: Env, config: ConfigFile, dev?: RunningDevSettings): ResolvedSettings {
  let profile: string = DEFAULT_PROFILE;
  let profileSource: SettingSource = 'default';
  const envProfile = envValue(env, 'HOOKRELAY_PROFILE');
  if (flags.profile !== undefined && flags.profile !== '') {
    profile = flags.profile;
    profileSource = 'flag';
  } else if (envProfile !== undefined) {
    profile = envProfile;
    profileSource = 'env';
  } else if (config.current_profile !== undefined) {
    profile = config.current_profile;
    profileSource = 'profile';
  }
  const stored = storedProfile(config, profile) ?? {};

  let apiUrl = DEFAULT_API_URL;
  let apiUrlSource: SettingSource = 'default';
  const envUrl = envValue(env, 'HOOKRELAY_API_URL');
  const useDev = dev !== undefined && profileSource !== 'flag' && profileSource !== 'env';
  if (flags['api-url'] !== undefined && flags['api-url'] !== '') {
    apiUrl = flags['api-url'];
    apiUrlSource = 'flag';
  } else if (envUrl !== undefined) {
    apiUrl = envUrl;
    apiUrlSource = 'env';
  } else if (useDev) {
    apiUrl = dev.apiUrl;
    apiUrlSource = 'dev';
  } else if (stored.api_url !== undefined) {
    apiUrl = stored.api_url;
    apiUrlSource = 'profile';
  }

  let apiKey: string | undefined;
  let apiKeySource: SettingSource | undefined;
  const envKey = envValue(env, 'HOOKRELAY_API_KEY');
  if (flags['api-key'] !== undefined && flags['api-key'] !== '') {
    apiKey = flags['api-key'];
    apiKeySource = 'flag';
  } else if (envKey !== undefined) {
    apiKey = envKey;
    apiKeySource = 'env';
  } else if (apiUrlSource === 'dev' && dev !== undefined) {
    apiKey = dev.apiKey;
    apiKeySource = 'dev';
  } else if (stored.api_key !== undefined) {
    apiKey = stored.api_key;
    apiKeySource = 'profile';
  }

  return { profile, profileSource, apiUrl: apiUrl.replace(/\/+$/u, ''), apiUrlSource, apiKey, apiKeySource };
}

/** `hr_…a1b2`: enough to tell keys apart, useless to an onlooker. */
export function maskApiKey(key: string): string {
  const hint = key.length > 8 ? key.slice(-4) : '';
  const prefix = key.startsWith('hr_') ? 'hr_' : '';
  return `${prefix}…${hint}`;
}

/** A copy of `config` with `profile` set to `values` (merged into what was stored). */
export function withProfile(config: ConfigFile, name: string, values: StoredProfile): ConfigFile {
  const previous = storedProfile(config, name) ?? {};
  return { ...config, profiles: { ...config.profiles, [name]: { ...previous, ...values } } };
}

/** A copy of `config` whose profile `name` keeps its URL but no longer has a key. */
export function withoutApiKey(config: ConfigFile, name: string): ConfigFile {
  const previous = storedProfile(config, name);
  if (previous === undefined) return config;
  const { api_key: _removed, ...rest } = previous;
  return { ...config, profiles: { ...config.profiles, [name]: rest } };
}

/**
 * The one place where the CLI reads the process environment. Everything else receives the `Env`
 * this returns, so that configuration is parsed from one snapshot and tests can inject any env.
 */
export function processEnvironment(): Env {
  return process.env;
}
