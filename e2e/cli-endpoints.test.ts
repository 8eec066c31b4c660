import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeConfigDir, parseJsonError, parseJsonOutput, runCli, type CliResult } from './helpers/cli.js';
import { startServer, type RunningServer } from './helpers/server.js';
import { freePort } from './helpers/processes.js';

/**
 * The CLI run as a subprocess against the real server (PGlite), the way scripts and CI use it:
 * no TTY, no config file unless a test logs in, assertions on --json output and exit codes.
 */

const ENDPOINT_ID = /^ep_[a-f0-9]{32}$/u;
const UNKNOWN_ID = 'ep_0123456789abcdef0123456789abcdef';
// Public-looking destinations: the server checks them but nothing is ever delivered here.
const URL_A = 'https://example.com/hook';
const URL_B = 'https://93.184.216.34/hook';

interface EndpointCreated {
  id: string;
  url: string;
  description: string;
  signing_key_id: string;
  signing_secret: string;
  key_hint: string;
  ephemeral: boolean;
  expires_at: string | null;
  created_at: string;
}

interface Endpoint {
  id: string;
  url: string;
  description: string;
  rate_limit_rps: number;
  burst: number;
  headers: Record<string, string>;
  paused: boolean;
  ephemeral: boolean;
  expires_at?: string;
}

interface EndpointPage {
  data: { id: string; paused: boolean; expires_at: string | null }[];
  next_cursor: string | null;
}

let server: RunningServer;
let env: Record<string, string>;

function explain(result: CliResult): string {
  return `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;
}

function expectSuccess(result: CliResult): void {
  expect(result.code, explain(result)).toBe(0);
}

/** A failure under --json: the exit code, nothing on stdout, one small JSON object on stderr. */
function expectJsonFailure(result: CliResult, exitCode: number, code: string): ReturnType<typeof parseJsonError>['error'] {
  expect(result.code, explain(result)).toBe(exitCode);
  expect(result.stdout).toBe('');
  expect(result.stderr.trim().split('\n')).toHaveLength(1);
  const { error } = parseJsonError(result);
  expect(error.code).toBe(code);
  expect(Object.keys(error).filter((key) => key !== 'details').sort()).toEqual(['code', 'message', 'request_id', 'status']);
  return error;
}

async function createEndpoint(...extra: string[]): Promise<EndpointCreated> {
  const result = await runCli(['endpoints', 'create', '--url', URL_A, ...extra, '--json'], { env });
  expectSuccess(result);
  return parseJsonOutput<EndpointCreated>(result);
}

beforeAll(async () => {
  server = await startServer();
  env = { HOOKRELAY_API_URL: server.url, HOOKRELAY_API_KEY: server.apiKey };
});

afterAll(async () => {
  await server?.stop();
});

describe('hookrelay basics', () => {
  it('prints its version', async () => {
    const result = await runCli(['--version']);
    expectSuccess(result);
    expect(result.stdout).toMatch(/^@hookrelay\/cli\/\d+\.\d+\.\d+ /u);
  });

  it('starts without oclif\'s Node version check (semver: 48 files at every start); OCLIF_DISABLE_ENGINE_WARNING="" restores it', async () => {
    const result = await runCli(['--version'], { env: { NODE_DEBUG: 'module' } });
    expectSuccess(result);
    // The log is live: it names the CommonJS modules oclif requires.
    expect(result.stderr).toMatch(/@oclif\/core/u);
    expect(result.stderr).not.toMatch(/node_modules\/semver\//u);
    const checked = await runCli(['--version'], { env: { NODE_DEBUG: 'module', OCLIF_DISABLE_ENGINE_WARNING: '' } });
    expectSuccess(checked);
    expect(checked.stderr).toMatch(/node_modules\/semver\//u);
  });

  it('treats an unknown command as a usage error (exit 2)', async () => {
    const result = await runCli(['endpoints', 'frobnicate', '--json'], { env });
    const error = expectJsonFailure(result, 2, 'INVALID_ARGUMENTS');
    // Nothing close enough to suggest.
    expect(error.message).toBe('unknown command "endpoints frobnicate"');
  });

  it('a mistyped command or flag says which one was meant, and runs nothing', async () => {
    const command = await runCli(['endpoint', 'lsit', '--limit', '1'], { env });
    expect(command.code, command.stderr).toBe(2);
    expect(command.stdout).toBe('');
    expect(command.stderr).toBe('INVALID_ARGUMENTS: unknown command "endpoint lsit": did you mean `hookrelay endpoints list`?\nhint: Run `hookrelay --help` for the list of commands.\n');
    // The words after the command are kept in the suggestion.
    const withArgs = expectJsonFailure(await runCli(['mesages', 'wait', '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71', '--json'], { env }), 2, 'INVALID_ARGUMENTS');
    expect(withArgs.message).toBe('unknown command "mesages wait 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71": did you mean `hookrelay messages wait 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71`?');
    const flag = expectJsonFailure(await runCli(['endpoints', 'list', '--limt', '1', '--json'], { env }), 2, 'INVALID_ARGUMENTS');
    expect(flag.message).toBe('Nonexistent flag: --limt (did you mean --limit?)');
    const flags = await runCli(['messages', 'wait', '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71', '-z', '--tiemout=3s', '--api-ky', 'x'], { env });
    expect(flags.code, flags.stderr).toBe(2);
    expect(flags.stderr).toMatch(/^INVALID_ARGUMENTS: Nonexistent flags: -z, --tiemout=3s \(did you mean --timeout\?\), --api-ky \(did you mean --api-key\?\)\n/u);
  });

  it('whoami --json names the project of the key', async () => {
    const result = await runCli(['whoami', '--json'], { env });
    expectSuccess(result);
    expect(parseJsonOutput(result)).toMatchObject({ project_name: 'default', api_url: server.url, profile: null });
  });
});

describe('endpoints create', () => {
  it('with env only and no config file: one JSON object whose id a script can read', async () => {
    const configDir = await makeConfigDir();
    try {
      const before = Date.now();
      const result = await runCli(['endpoints', 'create', '--url', URL_A, '--ephemeral', '--ttl', '30', '--json'], { env, configDir });
      expectSuccess(result);
      const created = parseJsonOutput<EndpointCreated>(result);
      expect(created.id).toMatch(ENDPOINT_ID);
      expect(created.ephemeral).toBe(true);
      expect(created.expires_at).not.toBeNull();
      const expiresIn = Date.parse(created.expires_at ?? '') - before;
      expect(expiresIn).toBeGreaterThan(29 * 60_000);
      expect(expiresIn).toBeLessThan(31 * 60_000);
      expect(created.signing_secret).toMatch(/^whsec_/u);
      // Exactly the API's data object: the create response fields and nothing else.
      expect(Object.keys(created).sort()).toEqual(
        ['channels', 'created_at', 'description', 'ephemeral', 'event_types', 'expires_at', 'id', 'key_hint', 'owner_id', 'signing_key_id', 'signing_secret', 'url'].sort(),
      );
      expect(await readdir(configDir)).toEqual([]);
    } finally {
      await rm(configDir, { recursive: true, force: true });
    }
  });

  it('sends description, rate limit, burst and headers', async () => {
    const created = await createEndpoint(
      '--description',
      'billing hooks',
      '--rate-limit',
      '5',
      '--burst',
      '10',
      '--header',
      'X-Team=billing',
      '--header',
      'X-Env=a=b',
    );
    expect(created.ephemeral).toBe(false);
    expect(created.expires_at).toBeNull();
    const result = await runCli(['endpoints', 'get', created.id, '--json'], { env });
    expectSuccess(result);
    expect(parseJsonOutput<Endpoint>(result)).toMatchObject({
      id: created.id,
      url: URL_A,
      description: 'billing hooks',
      rate_limit_rps: 5,
      burst: 10,
      headers: { 'X-Team': 'billing', 'X-Env': 'a=b' },
      paused: false,
      ephemeral: false,
    });
  });

  it('shows the signing secret once, with a warning, in human output', async () => {
    const result = await runCli(['endpoints', 'create', '--url', URL_B], { env });
    expectSuccess(result);
    const secret = /^\s+(whsec_\S+)$/mu.exec(result.stdout)?.[1];
    expect(secret, result.stdout).toBeDefined();
    expect(result.stdout.split(secret ?? '').length - 1).toBe(1);
    expect(result.stdout).toMatch(/shown only once/u);
    expect(result.stdout).toMatch(/will not show this secret again/u);
    expect(result.stdout).not.toContain('\u001b[');
  });

  it('maps server validation errors to exit 2 and names the field', async () => {
    for (const ttl of ['0', '1441']) {
      const result = await runCli(['endpoints', 'create', '--url', URL_A, '--ephemeral', '--ttl', ttl, '--json'], { env });
      const error = expectJsonFailure(result, 2, 'INVALID_REQUEST');
      expect(error.message).toContain('ttl_minutes');
      expect(error.status).toBe(400);
      expect(error.request_id).toEqual(expect.any(String));
    }
    const rate = await runCli(['endpoints', 'create', '--url', URL_A, '--rate-limit', '1001', '--json'], { env });
    expect(expectJsonFailure(rate, 2, 'INVALID_REQUEST').message).toContain('rate_limit_rps');
    const http = await runCli(['endpoints', 'create', '--url', 'http://example.com/hook', '--json'], { env });
    expect(expectJsonFailure(http, 2, 'INVALID_REQUEST').message).toContain('url');
  });

  it('refuses private destinations (SSRF guard) with exit 2', async () => {
    const result = await runCli(['endpoints', 'create', '--url', 'https://10.0.0.1/hook', '--json'], { env });
    expectJsonFailure(result, 2, 'INVALID_REQUEST');
  });

  it('answers a forbidden custom header with INVALID_HEADERS, exit 2', async () => {
    const result = await runCli(['endpoints', 'create', '--url', URL_A, '--header', 'Host=x', '--json'], { env });
    expect(expectJsonFailure(result, 2, 'INVALID_HEADERS').message).toMatch(/host/iu);
  });

  it('checks the K=V shape of --header before any request', async () => {
    const result = await runCli(['endpoints', 'create', '--url', URL_A, '--header', 'novalue', '--json'], { env });
    expect(expectJsonFailure(result, 2, 'INVALID_ARGUMENTS').request_id).toBeNull();
  });

  it('rejects bad flags with exit 2 and a small error, never oclif config', async () => {
    for (const args of [
      ['endpoints', 'create', '--url', URL_A, '--ttl', 'abc', '--ephemeral', '--json'],
      ['endpoints', 'create', '--no-such-flag', '--json'],
      ['endpoints', 'create', '--json'],
      ['endpoints', 'create', '--url', URL_A, '--ttl', '30', '--json'],
    ]) {
      const result = await runCli(args, { env });
      expectJsonFailure(result, 2, 'INVALID_ARGUMENTS');
      expect(result.stderr.length).toBeLessThan(400);
      expect(result.stderr).not.toContain('pjson');
    }
    const human = await runCli(['endpoints', 'create', '--url', URL_A, '--ttl', 'abc', '--ephemeral'], { env });
    expect(human.code).toBe(2);
    expect(human.stdout).toBe('');
    expect(human.stderr).toMatch(/^INVALID_ARGUMENTS: .*--ttl/mu);
  });
});

describe('authentication and transport failures', () => {
  const badKey = `hr_${'0'.repeat(40)}`;

  it('a bad key exits 3 with the message on stderr and nothing on stdout', async () => {
    const json = await runCli(['endpoints', 'create', '--url', URL_A, '--ephemeral', '--ttl', '30', '--json'], {
      env: { ...env, HOOKRELAY_API_KEY: badKey },
    });
    const error = expectJsonFailure(json, 3, 'UNAUTHORIZED');
    expect(error.status).toBe(401);
    expect(error.message).toMatch(/API key/iu);

    const human = await runCli(['endpoints', 'list'], { env: { ...env, HOOKRELAY_API_KEY: badKey } });
    expect(human.code).toBe(3);
    expect(human.stdout).toBe('');
    expect(human.stderr).toMatch(/^UNAUTHORIZED: .*API key.*\(request id \S+\)$/mu);
    expect(human.stderr).toMatch(/^hint: /mu);
  });

  it('no key at all exits 3 before any request', async () => {
    const result = await runCli(['endpoints', 'list', '--json'], { env: { HOOKRELAY_API_URL: server.url } });
    expectJsonFailure(result, 3, 'NO_API_KEY');
  });

  it('flags win over the environment', async () => {
    const flagBad = await runCli(['whoami', '--api-key', badKey, '--json'], { env });
    expectJsonFailure(flagBad, 3, 'UNAUTHORIZED');
    const flagGood = await runCli(['whoami', '--api-key', server.apiKey, '--api-url', server.url, '--json'], {
      env: { HOOKRELAY_API_KEY: badKey, HOOKRELAY_API_URL: 'http://127.0.0.1:1' },
    });
    expectSuccess(flagGood);
  });

  it('an unreachable server exits 7', async () => {
    const port = await freePort();
    const result = await runCli(['endpoints', 'list', '--json'], { env: { ...env, HOOKRELAY_API_URL: `http://127.0.0.1:${port}` } });
    expectJsonFailure(result, 7, 'NETWORK_ERROR');
    const human = await runCli(['whoami'], { env: { ...env, HOOKRELAY_API_URL: `http://127.0.0.1:${port}` } });
    expect(human.code).toBe(7);
    expect(human.stderr).toMatch(/^NETWORK_ERROR: /mu);
  });

  it('an API URL that is not a URL is a usage error', async () => {
    const result = await runCli(['whoami', '--json'], { env: { ...env, HOOKRELAY_API_URL: 'not a url' } });
    expectJsonFailure(result, 2, 'INVALID_ARGUMENTS');
  });
});

describe('endpoints get, update, pause, resume, rotate-secret, delete', () => {
  it('unknown ids exit 4 with ENDPOINT_NOT_FOUND for every command', async () => {
    for (const args of [
      ['get', UNKNOWN_ID],
      ['update', UNKNOWN_ID, '--description', 'x'],
      ['pause', UNKNOWN_ID],
      ['resume', UNKNOWN_ID],
      ['rotate-secret', UNKNOWN_ID],
      ['delete', UNKNOWN_ID, '--force'],
    ]) {
      const result = await runCli(['endpoints', ...args, '--json'], { env });
      expect(expectJsonFailure(result, 4, 'ENDPOINT_NOT_FOUND').status).toBe(404);
    }
  });

  it('a malformed id is an invalid request (exit 2)', async () => {
    const result = await runCli(['endpoints', 'get', 'ep_nope', '--json'], { env });
    expectJsonFailure(result, 2, 'INVALID_REQUEST');
  });

  it('update changes only what is given, replaces headers, and can clear them', async () => {
    const created = await createEndpoint('--description', 'before', '--header', 'X-Old=1');
    const updated = await runCli(
      ['endpoints', 'update', created.id, '--url', URL_B, '--rate-limit', '7', '--burst', '3', '--header', 'X-New=2', '--json'],
      { env },
    );
    expectSuccess(updated);
    expect(parseJsonOutput<Endpoint>(updated)).toMatchObject({
      id: created.id,
      url: URL_B,
      description: 'before',
      rate_limit_rps: 7,
      burst: 3,
      headers: { 'X-New': '2' },
    });

    const cleared = await runCli(['endpoints', 'update', created.id, '--clear-headers', '--json'], { env });
    expectSuccess(cleared);
    expect(parseJsonOutput<Endpoint>(cleared).headers).toEqual({});

    const nothing = await runCli(['endpoints', 'update', created.id, '--json'], { env });
    expectJsonFailure(nothing, 2, 'INVALID_ARGUMENTS');

    const forbidden = await runCli(['endpoints', 'update', created.id, '--header', 'webhook-id=x', '--json'], { env });
    expectJsonFailure(forbidden, 2, 'INVALID_HEADERS');
  });

  it('pause and resume flip the paused flag', async () => {
    const created = await createEndpoint();
    const paused = await runCli(['endpoints', 'pause', created.id, '--json'], { env });
    expectSuccess(paused);
    expect(parseJsonOutput(paused)).toEqual({ id: created.id, paused: true });
    const got = await runCli(['endpoints', 'get', created.id, '--json'], { env });
    expect(parseJsonOutput<Endpoint>(got).paused).toBe(true);

    const human = await runCli(['endpoints', 'get', created.id], { env });
    expectSuccess(human);
    expect(human.stdout).toMatch(/^Status:\s+paused manually since \d{4}-\d\d-\d\dT[\d:.]+Z \((now|\d+s ago)\)$/mu);

    const resumed = await runCli(['endpoints', 'resume', created.id, '--json'], { env });
    expectSuccess(resumed);
    expect(parseJsonOutput(resumed)).toEqual({ id: created.id, paused: false });
  });

  it('rotate-secret shows a new secret once', async () => {
    const created = await createEndpoint();
    const rotated = await runCli(['endpoints', 'rotate-secret', created.id, '--json'], { env });
    expectSuccess(rotated);
    const body = parseJsonOutput<{ signing_key_id: string; signing_secret: string; key_hint: string; previous_key_expires_at: string }>(rotated);
    expect(body.signing_secret).toMatch(/^whsec_/u);
    expect(body.signing_secret).not.toBe(created.signing_secret);
    expect(body.signing_key_id).not.toBe(created.signing_key_id);
    expect(body.key_hint).toBe(body.signing_secret.slice(-4));
    const keepsFor = Date.parse(body.previous_key_expires_at) - Date.now();
    expect(keepsFor).toBeGreaterThan(23 * 3600_000);
    expect(keepsFor).toBeLessThan(25 * 3600_000);

    const human = await runCli(['endpoints', 'rotate-secret', created.id], { env });
    expectSuccess(human);
    expect(human.stdout).toMatch(/^\s+whsec_\S+$/mu);
    expect(human.stdout).toMatch(/will not show this secret again/u);
  });

  it('delete without --force and without a TTY exits 2 and deletes nothing', async () => {
    const created = await createEndpoint();
    const refused = await runCli(['endpoints', 'delete', created.id], { env, input: 'y\n' });
    expect(refused.code, explain(refused)).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/^CONFIRMATION_REQUIRED: /mu);
    expect(refused.stderr).toContain('--force');
    const refusedJson = await runCli(['endpoints', 'delete', created.id, '--json'], { env });
    expectJsonFailure(refusedJson, 2, 'CONFIRMATION_REQUIRED');

    expectSuccess(await runCli(['endpoints', 'get', created.id, '--json'], { env }));
  });

  it('delete --force deletes; a second delete and a get then exit 4', async () => {
    const created = await createEndpoint();
    const deleted = await runCli(['endpoints', 'delete', created.id, '--force', '--json'], { env });
    expectSuccess(deleted);
    expect(parseJsonOutput(deleted)).toEqual({ id: created.id, deleted: true });
    expectJsonFailure(await runCli(['endpoints', 'delete', created.id, '--force', '--json'], { env }), 4, 'ENDPOINT_NOT_FOUND');
    expectJsonFailure(await runCli(['endpoints', 'get', created.id, '--json'], { env }), 4, 'ENDPOINT_NOT_FOUND');
  });
});

describe('endpoints list', () => {
  it('pages with --limit and --cursor through every endpoint exactly once', async () => {
    const made = [await createEndpoint(), await createEndpoint(), await createEndpoint()];

    const all = await runCli(['endpoints', 'list', '--limit', '200', '--json'], { env });
    expectSuccess(all);
    const everything = parseJsonOutput<EndpointPage>(all);
    expect(everything.next_cursor).toBeNull();
    const allIds = everything.data.map((endpoint) => endpoint.id);
    for (const endpoint of made) expect(allIds).toContain(endpoint.id);
    // Newest first. With ten or more endpoints this also catches a sort on the text form of a
    // numeric key ("9" > "11").
    expect(allIds.indexOf(made[2]?.id ?? '')).toBeLessThan(allIds.indexOf(made[0]?.id ?? ''));

    // Three or four pages, whatever the number of endpoints the file's other tests made.
    const limit = String(Math.ceil(allIds.length / 3));
    const paged: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page <= allIds.length; page += 1) {
      const args = ['endpoints', 'list', '--limit', limit, '--json', ...(cursor === null ? [] : ['--cursor', cursor])];
      const result = await runCli(args, { env });
      expectSuccess(result);
      const body = parseJsonOutput<EndpointPage>(result);
      expect(body.data.length).toBeLessThanOrEqual(Number(limit));
      paged.push(...body.data.map((endpoint) => endpoint.id));
      cursor = body.next_cursor;
      if (cursor === null) break;
    }
    expect(cursor).toBeNull();
    expect(paged).toEqual(allIds);
  });

  it('prints the next cursor as a hint on stderr in human output', async () => {
    await createEndpoint();
    await createEndpoint();
    const result = await runCli(['endpoints', 'list', '--limit', '1'], { env });
    expectSuccess(result);
    expect(result.stdout).toMatch(/^ID\s+URL\s+STATUS/u);
    expect(result.stdout.trim().split('\n')).toHaveLength(2);
    expect(result.stderr).toMatch(/hookrelay endpoints list --limit 1 --cursor \S+/u);
  });

  it('shows ephemeral expiry in list summaries', async () => {
    const created = await createEndpoint('--ephemeral', '--ttl', '5');
    const result = await runCli(['endpoints', 'list', '--limit', '200', '--json'], { env });
    const summary = parseJsonOutput<EndpointPage>(result).data.find((endpoint) => endpoint.id === created.id);
    expect(summary?.expires_at).toBe(created.expires_at);
  });

  it('rejects an out-of-range --limit with exit 2', async () => {
    const result = await runCli(['endpoints', 'list', '--limit', '0', '--json'], { env });
    expectJsonFailure(result, 2, 'INVALID_REQUEST');
  });
});

describe('login, whoami, config, logout', () => {
  let configDir: string;

  beforeAll(async () => {
    configDir = await makeConfigDir();
  });

  afterAll(async () => {
    await rm(configDir, { recursive: true, force: true });
  });

  it('login refuses a bad key and stores nothing', async () => {
    const result = await runCli(['login', '--api-url', server.url, '--api-key', `hr_${'1'.repeat(40)}`, '--json'], { configDir });
    expectJsonFailure(result, 3, 'UNAUTHORIZED');
    expect(await readdir(configDir)).toEqual([]);
  });

  it('login without a key and without a TTY asks for --api-key (exit 2)', async () => {
    const result = await runCli(['login', '--api-url', server.url, '--json'], { configDir });
    expectJsonFailure(result, 2, 'INVALID_ARGUMENTS');
  });

  it('login with flags stores a 0600 profile; whoami then works with no env', async () => {
    const login = await runCli(['login', '--api-url', server.url, '--api-key', server.apiKey, '--json'], { configDir });
    expectSuccess(login);
    expect(parseJsonOutput(login)).toMatchObject({ profile: 'default', project_name: 'default', api_url: server.url });
    expect((await stat(join(configDir, 'config.json'))).mode & 0o777).toBe(0o600);

    const human = await runCli(['login', '--api-url', server.url, '--api-key', server.apiKey], { configDir });
    expectSuccess(human);
    expect(human.stdout).toMatch(/Logged in to project default/u);

    const whoami = await runCli(['whoami', '--json'], { configDir });
    expectSuccess(whoami);
    expect(parseJsonOutput(whoami)).toMatchObject({ project_name: 'default', profile: 'default', api_url: server.url });

    const list = await runCli(['endpoints', 'list', '--limit', '1', '--json'], { configDir });
    expectSuccess(list);
  });

  it('config list masks keys and marks the current profile; config use switches', async () => {
    expectSuccess(await runCli(['login', '--profile', 'second', '--api-url', server.url, '--api-key', server.apiKey], { configDir }));

    const listed = await runCli(['config', 'list', '--json'], { configDir });
    expectSuccess(listed);
    expect(listed.stdout).not.toContain(server.apiKey);
    const view = parseJsonOutput<{ current_profile: string; profiles: { name: string; current: boolean; api_key_hint: string | null }[] }>(listed);
    expect(view.current_profile).toBe('second');
    expect(view.profiles.map((profile) => [profile.name, profile.current])).toEqual([
      ['default', false],
      ['second', true],
    ]);
    expect(view.profiles[0]?.api_key_hint).toBe(`hr_…${server.apiKey.slice(-4)}`);

    const human = await runCli(['config', 'list'], { configDir });
    expectSuccess(human);
    expect(human.stdout).toMatch(/^\*\s+second\s/mu);
    expect(human.stdout).not.toContain(server.apiKey);

    const used = await runCli(['config', 'use', 'default', '--json'], { configDir });
    expectSuccess(used);
    expect(parseJsonOutput(used)).toEqual({ current_profile: 'default' });
    const after = parseJsonOutput<{ current_profile: string }>(await runCli(['config', 'list', '--json'], { configDir }));
    expect(after.current_profile).toBe('default');

    expectJsonFailure(await runCli(['config', 'use', 'nope', '--json'], { configDir }), 4, 'PROFILE_NOT_FOUND');
    expectJsonFailure(await runCli(['whoami', '--profile', 'nope', '--json'], { configDir }), 4, 'PROFILE_NOT_FOUND');
  });

  it('environment settings win over the stored profile', async () => {
    const result = await runCli(['whoami', '--json'], { configDir, env: { HOOKRELAY_API_KEY: `hr_${'2'.repeat(40)}` } });
    expectJsonFailure(result, 3, 'UNAUTHORIZED');
  });

  it('logout removes the key; whoami then exits 3', async () => {
    const logout = await runCli(['logout', '--profile', 'second', '--json'], { configDir });
    expectSuccess(logout);
    expect(parseJsonOutput(logout)).toEqual({ profile: 'second', logged_out: true });
    expectJsonFailure(await runCli(['whoami', '--profile', 'second', '--json'], { configDir }), 3, 'NO_API_KEY');
    expectSuccess(await runCli(['whoami', '--json'], { configDir }));

    const again = await runCli(['logout', '--profile', 'second', '--json'], { configDir });
    expectSuccess(again);
    expect(parseJsonOutput(again)).toEqual({ profile: 'second', logged_out: false });
  });
});

describe('portal-links', () => {
  it("create --json hands out a token that opens the owner's session until revoke, and no log holds it", async () => {
    const created = await runCli(['portal-links', 'create', '--owner', 'cus_e2e', '--read-only', '--expires', '30m', '--json'], { env });
    expectSuccess(created);
    const link = parseJsonOutput<{ id: string; url: string; token: string; owner_id: string; read_only: boolean }>(created);
    expect(link).toMatchObject({ owner_id: 'cus_e2e', read_only: true });
    expect(link.url).toMatch(/\/portal#token=hrp_[a-f0-9]{40}$/);
    expect(link.url.endsWith(`#token=${link.token}`)).toBe(true);
    const session = () => fetch(`${server.url}/v1/portal/session`, { headers: { authorization: `Bearer ${link.token}` } });
    const open = await session();
    expect(open.status).toBe(200);
    expect(((await open.json()) as { data: { owner_id: string } }).data.owner_id).toBe('cus_e2e');
    expectSuccess(await runCli(['portal-links', 'revoke', link.id], { env }));
    expect((await session()).status).toBe(401);
    expect(server.logs()).not.toContain(link.token);
  });
});
