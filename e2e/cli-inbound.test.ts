import { randomUUID } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJsonError, parseJsonOutput, runCli, type CliResult } from './helpers/cli.js';
import { testResources } from './helpers/fixture.js';
import { startCli, until, type ListenProcess } from './helpers/listen.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * `hookrelay inbound …` run as a subprocess against the real server (PGlite): no TTY, assertions
 * on --json output and exit codes, and the effect of each command seen at the ingest URL.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/u;
const BAD_KEY = `hr_${'0'.repeat(40)}`;
// Public-looking destinations (one per endpoint: URLs are unique in a project): checked by the
// server, never delivered to in these tests.
const forwardUrl = (): string => `https://example.com/inbound-hook/${randomUUID()}`;

interface Created {
  id: string;
  name: string;
  url: string;
  mode: string;
  ingest_url: string;
  secret_token: string;
  signing_key_id?: string;
  signing_secret?: string;
  key_hint?: string;
  ephemeral: boolean;
  expires_at: string | null;
  created_at: string;
}

interface Endpoint {
  id: string;
  name: string;
  description: string;
  url: string;
  mode: string;
  paused: boolean;
  verify_static_token: boolean;
  static_token_header_name: string | null;
  verify_hmac: boolean;
  hmac_scheme: string;
  verify_ip_allowlist: boolean;
  allowed_cidrs: string[];
  idempotency_header_names: string[];
  ingest_response_code: number;
  signing_enabled: boolean;
  ingest_url: string;
  timestamp_tolerance_seconds: number;
}

interface LogRow {
  message_id: string;
  inbound_endpoint_id: string;
  status: string;
  received_at: string;
}

interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

let server: RunningServer;
let env: Record<string, string>;
const resources = testResources();

beforeAll(async () => {
  server = await startServer();
  env = { HOOKRELAY_API_URL: server.url, HOOKRELAY_API_KEY: server.apiKey };
});

afterAll(async () => {
  await resources.cleanup();
  await server?.stop();
});

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
  expect(error.code, explain(result)).toBe(code);
  expect(result.stderr).not.toContain('pjson');
  return error;
}

async function cli<T>(...args: string[]): Promise<T> {
  const result = await runCli([...args, '--json'], { env });
  expectSuccess(result);
  return parseJsonOutput<T>(result);
}

async function createInbound(...extra: string[]): Promise<Created> {
  return cli<Created>('inbound', 'create', '--name', `e2e ${Math.random().toString(16).slice(2, 8)}`, ...extra);
}

interface IngestAnswer {
  status: number;
  headers: Headers;
  messageId: string | undefined;
}

/** A webhook to the endpoint's ingest path, always at the server's own 127.0.0.1 address. */
async function ingest(token: string, init: { body?: string; headers?: Record<string, string>; path?: string } = {}): Promise<IngestAnswer> {
  const res = await fetch(`${server.url}/in/${token}${init.path ?? ''}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...init.headers },
    body: init.body ?? '{"hello":"world"}',
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  let messageId: string | undefined;
  try {
    messageId = (JSON.parse(text) as { data?: { message_id?: string } }).data?.message_id;
  } catch {
    messageId = undefined;
  }
  return { status: res.status, headers: res.headers, messageId };
}

async function ingestOk(token: string): Promise<string> {
  const answer = await ingest(token);
  expect(answer.status).toBe(200);
  expect(answer.messageId).toMatch(UUID);
  return answer.messageId ?? '';
}

describe('inbound create', () => {
  it('makes a cli-mode endpoint by default; --json is the API answer, with an ingest URL that works', async () => {
    const created = await createInbound();
    expect(created.id).toMatch(UUID);
    expect(created.mode).toBe('cli');
    expect(created.url).toBe('');
    expect(created.ingest_url).toMatch(new RegExp(`/in/${created.secret_token}$`, 'u'));
    expect(Object.keys(created).sort()).toEqual(['created_at', 'ephemeral', 'expires_at', 'id', 'ingest_url', 'mode', 'name', 'secret_token', 'url'].sort());
    await ingestOk(created.secret_token);
  });

  it('works with env only and no config file, for CI: an ephemeral endpoint', async () => {
    const before = Date.now();
    const created = await createInbound('--ephemeral', '--ttl', '30');
    expect(created.ephemeral).toBe(true);
    const expiresIn = Date.parse(created.expires_at ?? '') - before;
    expect(expiresIn).toBeGreaterThan(29 * 60_000);
    expect(expiresIn).toBeLessThan(31 * 60_000);
  });

  it('makes a forward endpoint with --url, and sends description, idempotency headers and the response code', async () => {
    const url = forwardUrl();
    const created = await createInbound('--url', url, '--description', 'from stripe', '--idempotency-header', 'X-Event-Id', '--idempotency-header', 'X-Other', '--response-code', '202');
    expect(created.mode).toBe('forward');
    expect(created.url).toBe(url);
    const endpoint = await cli<Endpoint>('inbound', 'get', created.id);
    expect(endpoint).toMatchObject({ description: 'from stripe', idempotency_header_names: ['X-Event-Id', 'X-Other'], ingest_response_code: 202 });

    const first = await ingest(created.secret_token, { headers: { 'X-Event-Id': 'evt_1' } });
    expect(first.status).toBe(202);
    const again = await ingest(created.secret_token, { headers: { 'X-Event-Id': 'evt_1' } });
    expect(again.status).toBe(202);
    expect(again.headers.get('hookrelay-duplicate')).toBe('true');
  });

  it('--static-token turns the static-token check on', async () => {
    const created = await createInbound('--static-token', 's3cret-token', '--static-token-header', 'X-Token');
    const endpoint = await cli<Endpoint>('inbound', 'get', created.id);
    expect(endpoint).toMatchObject({ verify_static_token: true, static_token_header_name: 'X-Token' });
    expect(JSON.stringify(endpoint)).not.toContain('s3cret-token');
    expect((await ingest(created.secret_token)).status).toBe(401);
    expect((await ingest(created.secret_token, { headers: { 'X-Token': 'wrong' } })).status).toBe(401);
    expect((await ingest(created.secret_token, { headers: { 'X-Token': 's3cret-token' } })).status).toBe(200);
  });

  it('--hmac-secret turns signature verification on (GitHub preset)', async () => {
    const secret = 'github-webhook-secret';
    const created = await createInbound('--hmac-scheme', 'github', '--hmac-secret', secret);
    const endpoint = await cli<Endpoint>('inbound', 'get', created.id);
    expect(endpoint).toMatchObject({ verify_hmac: true, hmac_scheme: 'github' });
    const body = '{"action":"opened"}';
    expect((await ingest(created.secret_token, { body })).status).toBe(401);
    const signature = await sign(secret, body);
    expect((await ingest(created.secret_token, { body, headers: { 'X-Hub-Signature-256': signature } })).status).toBe(200);
  });

  it('--allow-cidr turns the IP allowlist on; --no-verify-… keeps a setting with its check off', async () => {
    const allow = await createInbound('--allow-cidr', '203.0.113.0/24', '--allow-cidr', '198.51.100.7');
    expect(await cli<Endpoint>('inbound', 'get', allow.id)).toMatchObject({ verify_ip_allowlist: true, allowed_cidrs: ['203.0.113.0/24', '198.51.100.7'] });
    expect((await ingest(allow.secret_token)).status).toBe(401);

    const off = await createInbound('--hmac-scheme', 'github', '--hmac-secret', 'x', '--no-verify-hmac');
    expect(await cli<Endpoint>('inbound', 'get', off.id)).toMatchObject({ verify_hmac: false, hmac_scheme: 'github' });
    await ingestOk(off.secret_token);
  });

  it('--signing returns a signing secret, shown once with a warning in human output', async () => {
    const json = await createInbound('--signing');
    expect(json.signing_secret).toMatch(/^whsec_/u);
    expect(json.signing_key_id).toBeDefined();

    const human = await runCli(['inbound', 'create', '--name', 'human', '--signing'], { env });
    expectSuccess(human);
    const secret = /^\s+(whsec_\S+)$/mu.exec(human.stdout)?.[1];
    expect(secret, human.stdout).toBeDefined();
    expect(human.stdout.split(secret ?? '').length - 1).toBe(1);
    expect(human.stdout).toMatch(/shown only once/u);
    expect(human.stdout).toMatch(/will not show this secret again/u);
  });

  it('shows the ingest URL prominently in human output', async () => {
    const human = await runCli(['inbound', 'create', '--name', 'human url'], { env });
    expectSuccess(human);
    expect(human.stdout).toMatch(/^Created inbound endpoint [0-9a-f-]{36}$/mu);
    expect(human.stdout).toMatch(/^Ingest URL \(send webhooks here\):\n {2}http:\/\/\S+\/in\/[0-9a-f]{32}$/mu);
    expect(human.stdout).toMatch(/anyone who has it can post/u);
    expect(human.stdout).not.toContain('\u001b[');
    expect(human.stderr).toBe('');
  });

  it('bad flag values exit 2: CLI-side as INVALID_ARGUMENTS, server-side as INVALID_REQUEST naming the field', async () => {
    for (const args of [
      ['--mode', 'sideways'],
      ['--hmac-scheme', 'md5'],
      ['--timestamp-tolerance', 'abc'],
      ['--response-code', '2x0'],
      ['--ttl', '30'],
      ['--no-such-flag'],
    ]) {
      expectJsonFailure(await runCli(['inbound', 'create', '--name', 'bad', ...args, '--json'], { env }), 2, 'INVALID_ARGUMENTS');
    }
    expectJsonFailure(await runCli(['inbound', 'create', '--json'], { env }), 2, 'INVALID_ARGUMENTS');
    for (const [args, field] of [
      [['--response-code', '199'], 'ingest_response_code'],
      [['--ephemeral', '--ttl', '1441'], 'ttl_minutes'],
      [['--allow-cidr', 'not-a-cidr'], 'allowed_cidrs'],
      [['--static-token', 'x'], 'static_token_header_name'],
      [['--hmac-secret', 'x'], 'hmac_header_name'],
      [['--mode', 'forward'], 'url'],
      [['--url', 'http://example.com/hook'], 'url'],
    ] as const) {
      const error = expectJsonFailure(await runCli(['inbound', 'create', '--name', 'bad', ...args, '--json'], { env }), 2, 'INVALID_REQUEST');
      expect(error.message).toContain(field);
      expect(error.status).toBe(400);
    }
  });

  it('a bad key exits 3, no key exits 3', async () => {
    const bad = await runCli(['inbound', 'create', '--name', 'x', '--json'], { env: { ...env, HOOKRELAY_API_KEY: BAD_KEY } });
    expect(expectJsonFailure(bad, 3, 'UNAUTHORIZED').status).toBe(401);
    expectJsonFailure(await runCli(['inbound', 'create', '--name', 'x', '--json'], { env: { HOOKRELAY_API_URL: server.url } }), 3, 'NO_API_KEY');
  });
});

describe('inbound get, update, pause, resume, rotate-secret, delete', () => {
  it('unknown ids exit 4 (ENDPOINT_NOT_FOUND) and malformed ids exit 2 for every command', async () => {
    const unknown = randomUUID();
    for (const args of [
      ['get', unknown],
      ['update', unknown, '--description', 'x'],
      ['pause', unknown],
      ['resume', unknown],
      ['rotate-secret', unknown],
      ['delete', unknown, '--force'],
    ]) {
      const error = expectJsonFailure(await runCli(['inbound', ...args, '--json'], { env }), 4, 'ENDPOINT_NOT_FOUND');
      expect(error.status).toBe(404);
    }
    expectJsonFailure(await runCli(['inbound', 'get', 'not-a-uuid', '--json'], { env }), 2, 'INVALID_REQUEST');
  });

  it('a bad key exits 3 for every command', async () => {
    const id = randomUUID();
    for (const args of [['get', id], ['update', id, '--name', 'x'], ['pause', id], ['resume', id], ['rotate-secret', id], ['delete', id, '--force'], ['list']]) {
      expectJsonFailure(await runCli(['inbound', ...args, '--json'], { env: { ...env, HOOKRELAY_API_KEY: BAD_KEY } }), 3, 'UNAUTHORIZED');
    }
  });

  it('get shows the record; human output shows the ingest URL and the checks', async () => {
    const created = await createInbound('--static-token', 't0k', '--static-token-query', 'token');
    const endpoint = await cli<Endpoint>('inbound', 'get', created.id);
    expect(endpoint.id).toBe(created.id);
    expect(endpoint.ingest_url).toBe(created.ingest_url);
    const human = await runCli(['inbound', 'get', created.id], { env });
    expectSuccess(human);
    expect(human.stdout).toContain(created.ingest_url);
    expect(human.stdout).toMatch(/^Verification:\s+static token \(query token\)$/mu);
    expect(human.stdout).toMatch(/^Mode:\s+cli /mu);
  });

  it('update changes only what is given and answers the new record', async () => {
    const created = await createInbound('--description', 'before', '--idempotency-header', 'X-Id');
    const renamed = await cli<Endpoint>('inbound', 'update', created.id, '--name', 'renamed', '--response-code', '204');
    expect(renamed).toMatchObject({ id: created.id, name: 'renamed', description: 'before', ingest_response_code: 204, idempotency_header_names: ['X-Id'], mode: 'cli' });

    const url = forwardUrl();
    const forward = await cli<Endpoint>('inbound', 'update', created.id, '--mode', 'forward', '--url', url);
    expect(forward).toMatchObject({ mode: 'forward', url });

    const checks = await cli<Endpoint>('inbound', 'update', created.id, '--static-token', 'abc', '--static-token-header', 'X-T', '--clear-idempotency-headers', '--description', '');
    expect(checks).toMatchObject({ verify_static_token: true, idempotency_header_names: [], description: '' });
    expect((await ingest(created.secret_token)).status).toBe(401);
    const off = await cli<Endpoint>('inbound', 'update', created.id, '--no-verify-static-token');
    expect(off).toMatchObject({ verify_static_token: false, static_token_header_name: 'X-T' });
    // Accepted again, answered with the response code set above.
    expect((await ingest(created.secret_token)).status).toBe(204);

    const signing = await cli<Endpoint>('inbound', 'update', created.id, '--signing');
    expect(signing.signing_enabled).toBe(true);
  });

  it('update refuses nothing to change and bad values (exit 2)', async () => {
    const created = await createInbound();
    expectJsonFailure(await runCli(['inbound', 'update', created.id, '--json'], { env }), 2, 'INVALID_ARGUMENTS');
    expectJsonFailure(await runCli(['inbound', 'update', created.id, '--mode', 'nope', '--json'], { env }), 2, 'INVALID_ARGUMENTS');
    expectJsonFailure(await runCli(['inbound', 'update', created.id, '--clear-allow-cidrs', '--allow-cidr', '10.0.0.0/8', '--json'], { env }), 2, 'INVALID_ARGUMENTS');
    const error = expectJsonFailure(await runCli(['inbound', 'update', created.id, '--verify-hmac', '--json'], { env }), 2, 'INVALID_REQUEST');
    expect(error.message).toContain('hmac_secret');
  });

  it('pause makes the ingest URL answer 503; resume opens it again', async () => {
    const created = await createInbound();
    expect(await cli('inbound', 'pause', created.id)).toEqual({ id: created.id, paused: true });
    expect((await cli<Endpoint>('inbound', 'get', created.id)).paused).toBe(true);
    const paused = await ingest(created.secret_token);
    expect(paused.status).toBe(503);
    expect(paused.headers.get('retry-after')).not.toBeNull();
    const human = await runCli(['inbound', 'resume', created.id], { env });
    expectSuccess(human);
    expect(human.stdout).toMatch(/^Resumed /u);
    await ingestOk(created.secret_token);
  });

  it('rotate-secret shows a new signing secret', async () => {
    const created = await createInbound('--signing');
    const rotated = await cli<{ signing_key_id: string; signing_secret: string; key_hint: string; previous_key_expires_at: string }>('inbound', 'rotate-secret', created.id);
    expect(rotated.signing_secret).toMatch(/^whsec_/u);
    expect(rotated.signing_secret).not.toBe(created.signing_secret);
    expect(rotated.key_hint).toBe(rotated.signing_secret.slice(-4));
    const human = await runCli(['inbound', 'rotate-secret', created.id], { env });
    expectSuccess(human);
    expect(human.stdout).toMatch(/^\s+whsec_\S+$/mu);
    expect(human.stdout).toMatch(/will not show this secret again/u);
  });

  it('delete without --force and without a TTY exits 2 and deletes nothing', async () => {
    const created = await createInbound();
    const refused = await runCli(['inbound', 'delete', created.id], { env, input: 'y\n' });
    expect(refused.code, explain(refused)).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/^CONFIRMATION_REQUIRED: /mu);
    expect(refused.stderr).toContain('--force');
    expectJsonFailure(await runCli(['inbound', 'delete', created.id, '--json'], { env }), 2, 'CONFIRMATION_REQUIRED');
    await cli('inbound', 'get', created.id);
    await ingestOk(created.secret_token);
  });

  it('delete --force deletes: the ingest URL answers 410, get and a second delete exit 4', async () => {
    const created = await createInbound();
    expect(await cli('inbound', 'delete', created.id, '--force')).toEqual({ id: created.id, deleted: true });
    expect((await ingest(created.secret_token)).status).toBe(410);
    expectJsonFailure(await runCli(['inbound', 'get', created.id, '--json'], { env }), 4, 'ENDPOINT_NOT_FOUND');
    expectJsonFailure(await runCli(['inbound', 'delete', created.id, '--force', '--json'], { env }), 4, 'ENDPOINT_NOT_FOUND');
  });
});

describe('inbound list', () => {
  it('pages with --limit and --cursor; --all walks every page', async () => {
    const made = [await createInbound(), await createInbound(), await createInbound()];
    const everything = await cli<Page<{ id: string; mode: string }>>('inbound', 'list', '--limit', '200');
    expect(everything.next_cursor).toBeNull();
    const allIds = everything.data.map((endpoint) => endpoint.id);
    for (const endpoint of made) expect(allIds).toContain(endpoint.id);
    expect(allIds.indexOf(made[2]!.id)).toBeLessThan(allIds.indexOf(made[0]!.id));

    // Three or four pages, whatever the number of endpoints the file's other tests made.
    const limit = String(Math.ceil(allIds.length / 3));
    const paged: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page <= allIds.length; page += 1) {
      const body: Page<{ id: string }> = await cli('inbound', 'list', '--limit', limit, ...(cursor === null ? [] : ['--cursor', cursor]));
      expect(body.data.length).toBeLessThanOrEqual(Number(limit));
      paged.push(...body.data.map((endpoint) => endpoint.id));
      cursor = body.next_cursor;
      if (cursor === null) break;
    }
    expect(paged).toEqual(allIds);

    const walked = await cli<Page<{ id: string }>>('inbound', 'list', '--all', '--limit', '2');
    expect(walked.next_cursor).toBeNull();
    expect(walked.data.map((endpoint) => endpoint.id)).toEqual(allIds);
  });

  it('prints a table and the next-page command on stderr', async () => {
    await createInbound();
    await createInbound();
    const human = await runCli(['inbound', 'list', '--limit', '1'], { env });
    expectSuccess(human);
    expect(human.stdout).toMatch(/^ID\s+NAME\s+MODE\s+STATUS/u);
    expect(human.stdout.trim().split('\n')).toHaveLength(2);
    expect(human.stderr).toMatch(/hookrelay inbound list --limit 1 --cursor \S+/u);
    const all = await runCli(['inbound', 'list', '--all', '--limit', '1'], { env });
    expectSuccess(all);
    expect(all.stderr).toBe('');
  });

  it('rejects a bad --limit with exit 2', async () => {
    expectJsonFailure(await runCli(['inbound', 'list', '--limit', '0', '--json'], { env }), 2, 'INVALID_REQUEST');
    expectJsonFailure(await runCli(['inbound', 'list', '--limit', 'many', '--json'], { env }), 2, 'INVALID_ARGUMENTS');
  });
});

describe('inbound messages get: a large body', () => {
  it('is named by its size for people, not fetched; --json --base64 has it whole', async () => {
    const created = await createInbound();
    const text = 'a line of a large text body\n'.repeat(10_000);
    const res = await fetch(`${server.url}/in/${created.secret_token}`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: text });
    expect(res.status).toBe(200);
    const id = ((await res.json()) as { data: { message_id: string } }).data.message_id;
    const human = await runCli(['inbound', 'messages', 'get', id], { env });
    expectSuccess(human);
    expect(human.stdout).toContain(`(${text.length} bytes: too large to show here; --json --base64 gives it whole)`);
    expect(human.stdout).not.toContain('a line of a large text body');
    const whole = await cli<{ body: string; body_encoding: string }>('inbound', 'messages', 'get', id, '--base64');
    expect(Buffer.from(whole.body, 'base64').toString('utf8')).toBe(text);
  });
});

describe('inbound messages delete and delete-batch', () => {
  it('delete asks for --force without a TTY and deletes nothing; --force deletes, a repeat says already deleted', async () => {
    const created = await createInbound();
    const id = await ingestOk(created.secret_token);
    expectJsonFailure(await runCli(['inbound', 'messages', 'delete', id, '--json'], { env }), 2, 'CONFIRMATION_REQUIRED');
    const kept = await cli<{ body?: unknown; deleted_at?: string }>('inbound', 'messages', 'get', id);
    expect(kept.body).toEqual({ hello: 'world' });
    expect(kept.deleted_at).toBeUndefined();

    const deleted = await cli<{ message_id: string; deleted_at: string; already_deleted: boolean }>('inbound', 'messages', 'delete', id, '--force');
    expect(deleted).toMatchObject({ message_id: id, already_deleted: false });
    const gone = await cli<{ body?: unknown; deleted_at?: string }>('inbound', 'messages', 'get', id);
    expect(gone.body).toBeUndefined();
    expect(gone.deleted_at).toBe(deleted.deleted_at);

    const again = await runCli(['inbound', 'messages', 'delete', id, '--force'], { env });
    expectSuccess(again);
    expect(again.stdout).toMatch(/^Already deleted /u);
  });

  it('delete: unknown id exits 4, malformed id 2, bad key 3', async () => {
    expectJsonFailure(await runCli(['inbound', 'messages', 'delete', randomUUID(), '--force', '--json'], { env }), 4, 'NOT_FOUND');
    expectJsonFailure(await runCli(['inbound', 'messages', 'delete', 'nope', '--force', '--json'], { env }), 2, 'INVALID_REQUEST');
    expectJsonFailure(await runCli(['inbound', 'messages', 'delete', randomUUID(), '--force', '--json'], { env: { ...env, HOOKRELAY_API_KEY: BAD_KEY } }), 3, 'UNAUTHORIZED');
  });

  it('delete-batch gives each id an outcome', async () => {
    const created = await createInbound();
    const a = await ingestOk(created.secret_token);
    const b = await ingestOk(created.secret_token);
    const unknown = randomUUID();

    expectJsonFailure(await runCli(['inbound', 'messages', 'delete-batch', a, b, '--json'], { env }), 2, 'CONFIRMATION_REQUIRED');
    const human = await runCli(['inbound', 'messages', 'delete-batch', a, b], { env, input: 'y\n' });
    expect(human.code).toBe(2);
    expect(human.stderr).toMatch(/^CONFIRMATION_REQUIRED: refusing to delete 2 inbound messages/mu);
    expect((await cli<{ deleted_at?: string }>('inbound', 'messages', 'get', a)).deleted_at).toBeUndefined();

    await cli('inbound', 'messages', 'delete', b, '--force');
    const result = await cli<{ results: { message_id: string; outcome: string }[]; deleted_count: number; already_deleted_count: number; not_found_count: number }>(
      'inbound', 'messages', 'delete-batch', a, b, unknown, a, '--force',
    );
    expect(result.results.map((entry) => [entry.message_id, entry.outcome])).toEqual([
      [a, 'deleted'],
      [b, 'already_deleted'],
      [unknown, 'not_found'],
    ]);
    expect(result).toMatchObject({ deleted_count: 1, already_deleted_count: 1, not_found_count: 1 });
  });

  it('delete-batch: malformed ids and no ids exit 2 before any request, bad key 3', async () => {
    const error = expectJsonFailure(await runCli(['inbound', 'messages', 'delete-batch', randomUUID(), 'nope', '--force', '--json'], { env }), 2, 'INVALID_ARGUMENTS');
    expect(error.message).toContain('nope');
    expectJsonFailure(await runCli(['inbound', 'messages', 'delete-batch', '--force', '--json'], { env }), 2, 'INVALID_ARGUMENTS');
    expectJsonFailure(await runCli(['inbound', 'messages', 'delete-batch', randomUUID(), '--force', '--json'], { env: { ...env, HOOKRELAY_API_KEY: BAD_KEY } }), 3, 'UNAUTHORIZED');
  });

  it('messages get and replay: unknown id exits 4', async () => {
    expectJsonFailure(await runCli(['inbound', 'messages', 'get', randomUUID(), '--json'], { env }), 4, 'NOT_FOUND');
    expectJsonFailure(await runCli(['inbound', 'messages', 'replay', randomUUID(), '--json'], { env }), 4, 'NOT_FOUND');
  });
});

describe('inbound logs', () => {
  let endpoint: Created;
  let ids: string[];
  let createdAt: number;

  beforeAll(async () => {
    createdAt = Date.now();
    endpoint = await createInbound();
    ids = [];
    for (let i = 0; i < 3; i += 1) ids.push(await ingestOk(endpoint.secret_token));
  });

  it('filters by endpoint, newest first', async () => {
    const page = await cli<Page<LogRow>>('inbound', 'logs', '--endpoint', endpoint.id);
    expect(page.data.map((row) => row.message_id)).toEqual([...ids].reverse());
    expect(page.next_cursor).toBeNull();
    // `inbound messages get` names the id as the log rows do (and keeps `id`).
    expect(await cli<{ id: string; message_id: string }>('inbound', 'messages', 'get', ids[0]!)).toMatchObject({ id: ids[0], message_id: ids[0] });
    expect(page.data.every((row) => row.inbound_endpoint_id === endpoint.id && row.status === 'queued')).toBe(true);
  });

  it('filters by status and time (with the --received-after / --received-before aliases)', async () => {
    expect((await cli<Page<LogRow>>('inbound', 'logs', '--endpoint', endpoint.id, '--status', 'succeeded')).data).toEqual([]);
    expect((await cli<Page<LogRow>>('inbound', 'logs', '--endpoint', endpoint.id, '--status', 'queued')).data).toHaveLength(3);
    expect((await cli<Page<LogRow>>('inbound', 'logs', '--endpoint', endpoint.id, '--since', '1h')).data).toHaveLength(3);
    const before = new Date(createdAt - 60_000).toISOString();
    expect((await cli<Page<LogRow>>('inbound', 'logs', '--endpoint', endpoint.id, '--until', before)).data).toEqual([]);
    expect((await cli<Page<LogRow>>('inbound', 'logs', '--endpoint', endpoint.id, '--received-before', before)).data).toEqual([]);
    expect((await cli<Page<LogRow>>('inbound', 'logs', '--endpoint', endpoint.id, '--received-after', before)).data).toHaveLength(3);
    const third = (await cli<Page<LogRow>>('inbound', 'logs', '--endpoint', endpoint.id)).data[0]!;
    const after = await cli<Page<LogRow>>('inbound', 'logs', '--endpoint', endpoint.id, '--since', third.received_at);
    expect(after.data.map((row) => row.message_id)).toContain(ids[2]);
  });

  it('pages with --limit/--cursor, prints the next-page command, and --all walks every page', async () => {
    const first = await cli<Page<LogRow>>('inbound', 'logs', '--endpoint', endpoint.id, '--limit', '2');
    expect(first.data.map((row) => row.message_id)).toEqual([ids[2], ids[1]]);
    expect(first.next_cursor).not.toBeNull();
    const second = await cli<Page<LogRow>>('inbound', 'logs', '--endpoint', endpoint.id, '--limit', '2', '--cursor', first.next_cursor!);
    expect(second.data.map((row) => row.message_id)).toEqual([ids[0]]);
    expect(second.next_cursor).toBeNull();

    const all = await cli<Page<LogRow>>('inbound', 'logs', '--endpoint', endpoint.id, '--limit', '1', '--all');
    expect(all.data.map((row) => row.message_id)).toEqual([...ids].reverse());
    expect(all.next_cursor).toBeNull();

    const human = await runCli(['inbound', 'logs', '--endpoint', endpoint.id, '--limit', '1', '--since', '1h'], { env });
    expectSuccess(human);
    expect(human.stdout).toMatch(/^RECEIVED\s+MESSAGE\s+STATUS\s+ATTEMPTS/u);
    const hint = /hookrelay inbound logs (.*)$/mu.exec(human.stderr)?.[1];
    expect(hint, human.stderr).toMatch(new RegExp(`^--endpoint ${endpoint.id} --since \\S+Z --limit 1 --cursor \\S+$`, 'u'));
    // The hint, run as printed, gives the next page.
    const next = await runCli(['inbound', 'logs', ...hint!.split(' '), '--json'], { env });
    expectSuccess(next);
    expect(parseJsonOutput<Page<LogRow>>(next).data.map((row) => row.message_id)).toEqual([ids[1]]);
  });

  it('bad filter values exit 2; a bad key exits 3', async () => {
    for (const args of [['--status', 'lost'], ['--since', 'yesterday'], ['--until', '5'], ['--endpoint', 'nope'], ['--follow', '--cursor', 'abc'], ['--follow', '--all'], ['--limit', 'x']]) {
      expectJsonFailure(await runCli(['inbound', 'logs', ...args, '--json'], { env }), 2, 'INVALID_ARGUMENTS');
    }
    expectJsonFailure(await runCli(['inbound', 'logs', '--limit', '501', '--json'], { env }), 2, 'INVALID_REQUEST');
    expectJsonFailure(await runCli(['inbound', 'logs', '--json'], { env: { ...env, HOOKRELAY_API_KEY: BAD_KEY } }), 3, 'UNAUTHORIZED');
    expectJsonFailure(await runCli(['inbound', 'logs', '--follow', '--json'], { env: { ...env, HOOKRELAY_API_KEY: BAD_KEY } }), 3, 'UNAUTHORIZED');
  });

  it('--follow prints the latest rows, then each new row once, until Ctrl-C (exit 0)', async () => {
    const configDir = await resources.configDir();
    const follow: ListenProcess = startCli(['inbound', 'logs', '--follow', '--endpoint', endpoint.id, '--json'], { env, configDir });
    resources.defer(() => follow.kill());
    const lines = (): LogRow[] => follow.records<LogRow>();
    await until(() => lines().length >= 3, 'the first page', 20_000, () => follow.explain());
    expect(lines().map((row) => row.message_id)).toEqual(ids);

    const more = [await ingestOk(endpoint.secret_token), await ingestOk(endpoint.secret_token)];
    await until(() => lines().length >= 5, 'the new rows', 20_000, () => follow.explain());
    // Several more polls: nothing is printed twice.
    await new Promise((resolve) => setTimeout(resolve, 4_500));
    expect(lines().map((row) => row.message_id)).toEqual([...ids, ...more]);

    expect(await follow.stop('SIGINT')).toBe(0);
    expect(follow.stderr).toBe('');
  });

  it('--follow in human form prints one line per row and a note on stderr', async () => {
    const configDir = await resources.configDir();
    const follow = startCli(['inbound', 'logs', '--follow', '--endpoint', endpoint.id, '--limit', '1'], { env, configDir });
    resources.defer(() => follow.kill());
    await follow.waitForStderr(/following new messages/u);
    const id = await ingestOk(endpoint.secret_token);
    await until(() => follow.stdout.includes(id), 'the new row', 20_000, () => follow.explain());
    expect(follow.stdout.trim().split('\n')).toHaveLength(2);
    expect(follow.stdout).toMatch(new RegExp(`^\\S+Z {2}${id} {2}queued {2}- {2}- {2}endpoint ${endpoint.id}$`, 'mu'));
    expect(await follow.stop('SIGTERM')).toBe(0);
  });
});
