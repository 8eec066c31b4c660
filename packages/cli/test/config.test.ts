import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  configDirectory,
  configFilePath,
  DEFAULT_API_URL,
  maskApiKey,
  readConfigFile,
  resolveSettings,
  storedProfile,
  withoutApiKey,
  withProfile,
  writeConfigFile,
  type ConfigFile,
} from '../src/config.js';
import { CliFailure } from '../src/errors.js';

const stored: ConfigFile = {
  current_profile: 'staging',
  profiles: {
    default: { api_url: 'http://default.test:8787', api_key: 'hr_default' },
    staging: { api_url: 'http://staging.test:8787', api_key: 'hr_staging' },
    urlonly: { api_url: 'http://urlonly.test' },
  },
};

describe('configDirectory', () => {
  it('prefers HOOKRELAY_CONFIG_DIR, then XDG_CONFIG_HOME, then HOME, then the given home', () => {
    const env = { HOOKRELAY_CONFIG_DIR: '/cfg', XDG_CONFIG_HOME: '/xdg', HOME: '/home/u' };
    expect(configDirectory(env, '/fallback')).toBe('/cfg');
    expect(configDirectory({ ...env, HOOKRELAY_CONFIG_DIR: undefined }, '/fallback')).toBe('/xdg/hookrelay');
    expect(configDirectory({ HOME: '/home/u' }, '/fallback')).toBe('/home/u/.config/hookrelay');
    expect(configDirectory({}, '/fallback')).toBe('/fallback/.config/hookrelay');
  });

  it('treats empty variables as unset', () => {
    expect(configDirectory({ HOOKRELAY_CONFIG_DIR: '', XDG_CONFIG_HOME: '', HOME: '/h' }, '/f')).toBe('/h/.config/hookrelay');
  });

  it('names config.json inside it', () => {
    expect(configFilePath({ HOOKRELAY_CONFIG_DIR: '/cfg' }, '/f')).toBe('/cfg/config.json');
  });
});

describe('resolveSettings precedence', () => {
  const env = { HOOKRELAY_API_URL: 'http://env.test', HOOKRELAY_API_KEY: 'hr_env' };

  it('flags win over the environment and the profile', () => {
    const settings = resolveSettings({ 'api-url': 'http://flag.test', 'api-key': 'hr_flag' }, env, stored);
    expect(settings).toMatchObject({ apiUrl: 'http://flag.test', apiUrlSource: 'flag', apiKey: 'hr_flag', apiKeySource: 'flag' });
  });

  it('the environment wins over the profile', () => {
    const settings = resolveSettings({}, env, stored);
    expect(settings).toMatchObject({ apiUrl: 'http://env.test', apiUrlSource: 'env', apiKey: 'hr_env', apiKeySource: 'env' });
  });

  it('each setting falls through on its own', () => {
    const settings = resolveSettings({ 'api-key': 'hr_flag' }, { HOOKRELAY_API_URL: 'http://env.test' }, stored);
    expect(settings).toMatchObject({ apiUrl: 'http://env.test', apiUrlSource: 'env', apiKey: 'hr_flag', apiKeySource: 'flag' });
  });

  it('uses the current profile when nothing overrides it', () => {
    const settings = resolveSettings({}, {}, stored);
    expect(settings).toMatchObject({
      profile: 'staging',
      profileSource: 'profile',
      apiUrl: 'http://staging.test:8787',
      apiUrlSource: 'profile',
      apiKey: 'hr_staging',
      apiKeySource: 'profile',
    });
  });

  it('selects the profile by flag, then HOOKRELAY_PROFILE, then current_profile, then "default"', () => {
    expect(resolveSettings({ profile: 'default' }, { HOOKRELAY_PROFILE: 'urlonly' }, stored)).toMatchObject({
      profile: 'default',
      profileSource: 'flag',
      apiKey: 'hr_default',
    });
    expect(resolveSettings({}, { HOOKRELAY_PROFILE: 'urlonly' }, stored)).toMatchObject({
      profile: 'urlonly',
      profileSource: 'env',
      apiUrl: 'http://urlonly.test',
      apiKey: undefined,
      apiKeySource: undefined,
    });
    const noCurrent: ConfigFile = { profiles: stored.profiles };
    expect(resolveSettings({}, {}, noCurrent)).toMatchObject({ profile: 'default', profileSource: 'default', apiKey: 'hr_default' });
  });

  it('works with no config file at all (environment only, as in CI)', () => {
    const settings = resolveSettings({}, env, { profiles: {} });
    expect(settings).toMatchObject({ profile: 'default', apiUrl: 'http://env.test', apiKey: 'hr_env' });
  });

  it('falls back to the default URL and no key', () => {
    expect(resolveSettings({}, {}, { profiles: {} })).toMatchObject({
      apiUrl: DEFAULT_API_URL,
      apiUrlSource: 'default',
      apiKey: undefined,
    });
  });

  it('ignores empty values and trailing slashes', () => {
    const settings = resolveSettings({ 'api-url': '' }, { HOOKRELAY_API_URL: 'http://env.test/', HOOKRELAY_API_KEY: '' }, stored);
    expect(settings).toMatchObject({ apiUrl: 'http://env.test', apiKey: 'hr_staging', apiKeySource: 'profile' });
  });
});

describe('config file', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hookrelay-cli-test-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is written with mode 0600 inside a new 0700 directory, and reads back', async () => {
    const path = join(dir, 'nested', 'hookrelay', 'config.json');
    await writeConfigFile(path, stored);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'nested', 'hookrelay'))).mode & 0o777).toBe(0o700);
    expect(await readConfigFile(path)).toEqual(stored);
  });

  it('tightens an existing looser file to 0600 on rewrite', async () => {
    const path = join(dir, 'config.json');
    await writeFile(path, '{"profiles":{}}', { mode: 0o644 });
    await writeConfigFile(path, stored);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });

  it('has the documented shape on disk', async () => {
    const path = join(dir, 'config.json');
    await writeConfigFile(path, withProfile({ profiles: {} }, 'default', { api_url: 'http://x.test', api_key: 'hr_k' }));
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual({
      profiles: { default: { api_url: 'http://x.test', api_key: 'hr_k' } },
    });
  });

  it('reads a missing file as an empty configuration', async () => {
    expect(await readConfigFile(join(dir, 'absent.json'))).toEqual({ profiles: {} });
  });

  it('rejects a file that is not JSON with a config error', async () => {
    const path = join(dir, 'config.json');
    await writeFile(path, '{not json');
    await expect(readConfigFile(path)).rejects.toSatisfy(
      (error: unknown) => error instanceof CliFailure && error.code === 'CONFIG_ERROR' && error.exitCode === 1,
    );
  });

  it('drops malformed entries instead of failing', async () => {
    const path = join(dir, 'config.json');
    await writeFile(path, JSON.stringify({ current_profile: 3, profiles: { a: 'x', b: { api_url: 5, api_key: 'hr_b' } } }));
    expect(await readConfigFile(path)).toEqual({ profiles: { b: { api_key: 'hr_b' } } });
  });

  it('keeps profiles named __proto__ or constructor as ordinary profiles, and finds no inherited one', async () => {
    const path = join(dir, 'config.json');
    await writeFile(path, '{"current_profile":"__proto__","profiles":{"__proto__":{"api_url":"http://proto.test","api_key":"hr_proto"}}}');
    const config = await readConfigFile(path);
    expect(Object.keys(config.profiles)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(config.profiles)).toBe(Object.prototype);
    expect(resolveSettings({}, {}, config)).toMatchObject({ profile: '__proto__', apiUrl: 'http://proto.test', apiKey: 'hr_proto' });
    expect(resolveSettings({ profile: 'constructor' }, {}, config)).toMatchObject({ profile: 'constructor', apiUrl: DEFAULT_API_URL, apiKey: undefined });
    expect(storedProfile(config, 'toString')).toBeUndefined();
    const saved = withProfile(config, 'constructor', { api_key: 'hr_c' });
    await writeConfigFile(path, saved);
    expect(Object.keys((await readConfigFile(path)).profiles).sort()).toEqual(['__proto__', 'constructor']);
  });
});

describe('profile edits', () => {
  it('logout keeps the URL and drops only the key', () => {
    expect(withoutApiKey(stored, 'staging').profiles.staging).toEqual({ api_url: 'http://staging.test:8787' });
    expect(withoutApiKey(stored, 'absent')).toBe(stored);
  });

  it('masks keys to their last four characters', () => {
    expect(maskApiKey('hr_0123456789abcdef0123456789abcdef0123abcd')).toBe('hr_…abcd');
    expect(maskApiKey('short')).toBe('…');
  });
});

describe('resolveSettings with a running hookrelay dev', () => {
  const dev = { apiUrl: 'http://127.0.0.1:9999', apiKey: 'hr_dev' };
  const config = { current_profile: 'work', profiles: { work: { api_url: 'https://hooks.example.com', api_key: 'hr_work' } } };

  it('supplies address and key over the current profile and the default', () => {
    expect(resolveSettings({}, {}, config, dev)).toMatchObject({ apiUrl: dev.apiUrl, apiUrlSource: 'dev', apiKey: 'hr_dev', apiKeySource: 'dev' });
    expect(resolveSettings({}, {}, { profiles: {} }, dev)).toMatchObject({ apiUrl: dev.apiUrl, apiKeySource: 'dev' });
  });

  it('gives way to an address from a flag or the environment, and never sends its key there', () => {
    expect(resolveSettings({ 'api-url': 'http://other' }, {}, { profiles: {} }, dev)).toMatchObject({ apiUrl: 'http://other', apiKey: undefined });
    expect(resolveSettings({}, { HOOKRELAY_API_URL: 'http://other' }, config, dev)).toMatchObject({ apiUrl: 'http://other', apiKey: 'hr_work', apiKeySource: 'profile' });
  });

  it('gives way to a profile named by --profile or HOOKRELAY_PROFILE', () => {
    expect(resolveSettings({ profile: 'work' }, {}, config, dev)).toMatchObject({ apiUrl: 'https://hooks.example.com', apiKeySource: 'profile' });
    expect(resolveSettings({}, { HOOKRELAY_PROFILE: 'work' }, config, dev)).toMatchObject({ apiUrl: 'https://hooks.example.com', apiKey: 'hr_work' });
  });

  it('keeps a key from a flag or the environment with its address', () => {
    expect(resolveSettings({ 'api-key': 'hr_flag' }, {}, config, dev)).toMatchObject({ apiUrl: dev.apiUrl, apiKey: 'hr_flag', apiKeySource: 'flag' });
    expect(resolveSettings({}, { HOOKRELAY_API_KEY: 'hr_env' }, config, dev)).toMatchObject({ apiUrl: dev.apiUrl, apiKey: 'hr_env', apiKeySource: 'env' });
  });
});
