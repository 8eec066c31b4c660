import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliResult } from './helpers/cli.js';
import { eventually, expectJsonFailure, expectSuccess } from './helpers/expect-cli.js';
import { startDeliveryRig, type DeliveryRig } from './helpers/delivery-rig.js';
import { api } from './helpers/listen.js';
import type { HttpsReceiver } from './helpers/https-receiver.js';

/**
 * `event-types create|list|get|update|delete`, `events send|get|list` and the subscription flags of
 * `endpoints create|update|list|get`, run as the built CLI against the real server. Deliveries go
 * to a local HTTPS receiver (`/ok…` answers 200, anything else 500); one retry an hour after a
 * failure keeps a failed message in pending_retry for the test.
 */

interface EventType {
  name: string;
  description: string;
  schema: unknown;
  example: unknown;
  archived: boolean;
}

interface Endpoint {
  id: string;
  owner_id: string | null;
  event_types: string[] | null;
  channels: string[] | null;
}

interface Accepted {
  event_id: string;
  event_type: string;
  owner_id: string | null;
  channels: string[];
  messages: { message_id: string; endpoint_id: string }[];
  created_at: string;
}

interface EventRecord extends Omit<Accepted, 'messages'> {
  content_type: string;
  idempotency_key: string | null;
  message_count: number;
  payload?: unknown;
  body?: string;
  messages: { message_id: string; endpoint_id: string; status: string; attempt_count: number; response_status: number | null }[];
}

interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

let rig: DeliveryRig;
let receiver: HttpsReceiver;
let workDir: string;
/** Owners of this file's endpoints, so that its events reach only them. */
const OWNER = `acme-${randomUUID().slice(0, 8)}`;
const OTHER_OWNER = `globex-${randomUUID().slice(0, 8)}`;

const cli = (args: readonly string[], input?: string): Promise<CliResult> => rig.cli(args, input);
const json = <T>(args: readonly string[], input?: string): Promise<T> => rig.json<T>(args, input);

async function file(name: string, content: string): Promise<string> {
  const path = join(workDir, name);
  await writeFile(path, content);
  return path;
}

const SCHEMA = JSON.stringify({
  type: 'object',
  required: ['invoice', 'amount'],
  properties: { invoice: { type: 'string' }, amount: { type: 'integer', minimum: 0 } },
});

beforeAll(async () => {
  rig = await startDeliveryRig('events');
  ({ receiver, workDir } = rig);
});

afterAll(async () => {
  await rig?.stop();
});

describe('event-types', () => {
  it('create reads --schema and --example from files; get shows them; a taken name is exit 5', async () => {
    const schema = await file('invoice-paid.schema.json', SCHEMA);
    const example = await file('invoice-paid.example.json', '{"invoice":"in_1","amount":100}');
    const created = await json<EventType>(['event-types', 'create', 'invoice.paid', '--description', 'An invoice was paid', '--schema', `@${schema}`, '--example', `@${example}`]);
    expect(created).toMatchObject({ name: 'invoice.paid', description: 'An invoice was paid', schema: JSON.parse(SCHEMA), example: { invoice: 'in_1', amount: 100 }, archived: false });

    const human = await cli(['event-types', 'get', 'invoice.paid']);
    expectSuccess(human);
    expect(human.stdout).toMatch(/^Name:\s+invoice\.paid$/mu);
    expect(human.stdout).toMatch(/^Status:\s+active$/mu);
    expect(human.stdout).toMatch(/^Schema\n\{\n {2}"type": "object",$/mu);
    expect(human.stdout).toMatch(/^Example\n\{\n {2}"invoice": "in_1",\n {2}"amount": 100\n\}$/mu);

    expectJsonFailure(await cli(['event-types', 'create', 'invoice.paid', '--json']), 5, 'DUPLICATE_NAME');
  });

  it('checks its input before any request: a missing file, a directory, text that is not JSON (exit 2, no request id)', async () => {
    const broken = await file('broken.json', '{"type":');
    for (const args of [
      ['--schema', `@${join(workDir, 'missing.json')}`],
      ['--schema', `@${workDir}`],
      ['--schema', `@${broken}`],
      ['--example', '{amount: 1}'],
      ['--schema', '@-', '--example', '@-'],
    ]) {
      const error = expectJsonFailure(await cli(['event-types', 'create', 'never.made', ...args, '--json']), 2, 'INVALID_ARGUMENTS');
      expect(error.request_id).toBeNull();
    }
    const human = await cli(['event-types', 'create', 'never.made', '--schema', `@${join(workDir, 'missing.json')}`]);
    expect(human.code).toBe(2);
    expect(human.stderr).toBe(`INVALID_ARGUMENTS: --schema @${join(workDir, 'missing.json')}: no such file\nhint: See --help for the flags of this command.\n`);
    expectJsonFailure(await cli(['event-types', 'get', 'never.made', '--json']), 4, 'NOT_FOUND');
  });

  it("passes on the server's refusals: a schema that does not compile, an example that does not match (exit 2)", async () => {
    const typo = expectJsonFailure(await cli(['event-types', 'create', 'typo.schema', '--schema', '{"type":"object","requird":["a"]}', '--json']), 2, 'INVALID_REQUEST');
    expect(typo.message).toMatch(/unknown keyword: "requird"/u);
    const mismatch = await cli(['event-types', 'update', 'invoice.paid', '--example', '{"invoice":"in_2","amount":-1}']);
    expect(mismatch.code).toBe(2);
    expect(mismatch.stderr).toMatch(/^INVALID_REQUEST: body\.example: does not match the schema at \/amount: must be >= 0 \(minimum\)/u);
  });

  it('update changes only what is given, reads stdin for @-, and archives; list filters by --archived', async () => {
    const updated = await json<EventType>(['event-types', 'update', 'invoice.paid', '--example', '@-'], '{"invoice":"in_9","amount":9}');
    expect(updated).toMatchObject({ description: 'An invoice was paid', schema: JSON.parse(SCHEMA), example: { invoice: 'in_9', amount: 9 } });
    const legacy = await json<EventType>(['event-types', 'create', 'invoice.legacy', '--archived']);
    expect(legacy.archived).toBe(true);
    const cleared = await json<EventType>(['event-types', 'update', 'invoice.legacy', '--description', 'old', '--no-archived', '--clear-schema', '--clear-example']);
    expect(cleared).toMatchObject({ description: 'old', schema: null, example: null, archived: false });
    await json<EventType>(['event-types', 'update', 'invoice.legacy', '--archived']);
    expectJsonFailure(await cli(['event-types', 'update', 'invoice.legacy', '--json']), 2, 'INVALID_ARGUMENTS');

    const archived = await json<Page<EventType>>(['event-types', 'list', '--archived']);
    expect(archived.data.map((type) => type.name)).toEqual(['invoice.legacy']);
    const active = await json<Page<EventType>>(['event-types', 'list', '--no-archived']);
    expect(active.data.map((type) => type.name)).toEqual(['hookrelay.endpoint.paused', 'hookrelay.message.failed', 'invoice.paid']);
    const table = await cli(['event-types', 'list']);
    expectSuccess(table);
    expect(table.stdout.split('\n')[0]).toMatch(/^NAME\s+STATUS\s+SCHEMA\s+EXAMPLE\s+DESCRIPTION$/u);
    expect(table.stdout).toMatch(/^invoice\.legacy\s+archived\s+-\s+-\s+old$/mu);
    expect(table.stdout).toMatch(/^invoice\.paid\s+active\s+yes\s+yes\s+An invoice was paid$/mu);
    const firstPage = await cli(['event-types', 'list', '--limit', '1']);
    expectSuccess(firstPage);
    expect(firstPage.stderr).toMatch(/^More event types: hookrelay event-types list --limit 1 --cursor \S+$/mu);
  });

  it('delete asks for --force without a terminal, then removes the type (exit 4 after)', async () => {
    expectJsonFailure(await cli(['event-types', 'delete', 'invoice.legacy', '--json']), 2, 'CONFIRMATION_REQUIRED');
    expect(await json(['event-types', 'delete', 'invoice.legacy', '--force'])).toEqual({ name: 'invoice.legacy', deleted: true });
    expectJsonFailure(await cli(['event-types', 'get', 'invoice.legacy', '--json']), 4, 'NOT_FOUND');
    expectJsonFailure(await cli(['event-types', 'delete', 'hookrelay.message.failed', '--force', '--json']), 2, 'INVALID_REQUEST');
  });
});

describe('endpoints: owner, event types and channels', () => {
  it('create, update and get carry the subscription; list filters by --owner and --event-type', async () => {
    const created = await json<Endpoint>(['endpoints', 'create', '--url', `${receiver.url}/ok/sub`, '--owner', OWNER, '--event-types', 'invoice.*,customer.created', '--event-types', 'order.*', '--channels', 'eu']);
    expect(created).toMatchObject({ owner_id: OWNER, event_types: ['invoice.*', 'customer.created', 'order.*'], channels: ['eu'] });

    const none = await json<Endpoint>(['endpoints', 'update', created.id, '--event-types', '', '--channels', 'eu,us']);
    expect(none).toMatchObject({ owner_id: OWNER, event_types: [], channels: ['eu', 'us'] });
    const human = await cli(['endpoints', 'get', created.id]);
    expectSuccess(human);
    expect(human.stdout).toMatch(new RegExp(`^Owner:\\s+${OWNER}$`, 'mu'));
    expect(human.stdout).toMatch(/^Event types:\s+none$/mu);
    expect(human.stdout).toMatch(/^Channels:\s+eu, us$/mu);

    const reset = await json<Endpoint>(['endpoints', 'update', created.id, '--clear-owner', '--all-event-types', '--any-channel']);
    expect(reset).toMatchObject({ owner_id: null, event_types: null, channels: null });
    const defaults = await cli(['endpoints', 'get', created.id]);
    expect(defaults.stdout).toMatch(/^Owner:\s+\(none: your own endpoint\)$/mu);
    expect(defaults.stdout).toMatch(/^Event types:\s+every type \(not hookrelay\.\*\)$/mu);
    expect(defaults.stdout).toMatch(/^Channels:\s+any$/mu);
    expectJsonFailure(await cli(['endpoints', 'update', created.id, '--owner', 'x', '--clear-owner', '--json']), 2, 'INVALID_ARGUMENTS');

    await json<Endpoint>(['endpoints', 'update', created.id, '--owner', OTHER_OWNER, '--event-types', 'shipment.*']);
    const byOwner = await json<Page<{ id: string }>>(['endpoints', 'list', '--owner', OTHER_OWNER]);
    expect(byOwner.data.map((endpoint) => endpoint.id)).toEqual([created.id]);
    expect((await json<Page<{ id: string }>>(['endpoints', 'list', '--owner', OTHER_OWNER, '--event-type', 'shipment.sent'])).data).toHaveLength(1);
    expect((await json<Page<{ id: string }>>(['endpoints', 'list', '--owner', OTHER_OWNER, '--event-type', 'invoice.paid'])).data).toHaveLength(0);
    const empty = await cli(['endpoints', 'list', '--owner', 'nobody-at-all']);
    expectSuccess(empty);
    expect(empty.stdout).toBe('No endpoints match.\n');
  });
});

describe('events', () => {
  let delivered: string;
  let failing: string;
  let euOnly: string;

  beforeAll(async () => {
    const create = async (path: string, ...flags: string[]): Promise<string> => (await json<Endpoint>(['endpoints', 'create', '--url', `${receiver.url}${path}`, ...flags])).id;
    delivered = await create('/ok/acme', '--owner', OWNER, '--event-types', 'invoice.*');
    failing = await create('/fail/acme', '--owner', OWNER, '--event-types', 'invoice.paid,customer.*');
    euOnly = await create('/ok/acme-eu', '--owner', OWNER, '--channels', 'eu');
    // Another owner's endpoint takes every type; the events of OWNER must never reach it.
    await create('/ok/globex', '--owner', OTHER_OWNER);
  });

  it('send fans out to the endpoints of the owner, type and channel; each receiver gets the payload', async () => {
    const payload = await file('invoice.json', '{"invoice":"in_42","amount":1999}');
    const accepted = await json<Accepted>(['events', 'send', '--type', 'invoice.paid', '--owner', OWNER, '--payload', `@${payload}`]);
    expect(accepted).toMatchObject({ event_type: 'invoice.paid', owner_id: OWNER, channels: [] });
    expect(accepted.messages.map((m) => m.endpoint_id).sort()).toEqual([delivered, failing].sort());

    const ok = accepted.messages.find((m) => m.endpoint_id === delivered)!;
    await eventually(async () => receiver.received.find((r) => r.headers['webhook-id'] === ok.message_id), 'the delivery to /ok/acme');
    const request = receiver.received.find((r) => r.headers['webhook-id'] === ok.message_id)!;
    expect(request.path).toBe('/ok/acme');
    expect(request.body.toString('utf8')).toBe('{"invoice":"in_42","amount":1999}');
    expect(request.headers['hookrelay-event-type']).toBe('invoice.paid');

    const withChannel = await json<Accepted>(['events', 'send', '--type', 'invoice.paid', '--owner', OWNER, '--channel', 'eu,us', '--payload', '{"invoice":"in_43","amount":1}']);
    expect(withChannel.channels).toEqual(['eu', 'us']);
    expect(withChannel.messages.map((m) => m.endpoint_id).sort()).toEqual([delivered, failing, euOnly].sort());
  });

  it('get shows the fan-out as endpoint, message and delivery status', async () => {
    const accepted = await json<Accepted>(['events', 'send', '--type', 'invoice.paid', '--owner', OWNER, '--payload', '{"invoice":"in_44","amount":5}']);
    // Polled through the API (a CLI process per poll would cost more than the test), then read with the CLI.
    await eventually(async () => {
      const record = await api<EventRecord>(rig.server.url, rig.server.apiKey, 'GET', `/v1/events/${accepted.event_id}`);
      return record.messages.map((m) => m.status).sort().join() === 'pending_retry,succeeded' ? true : undefined;
    }, 'one delivery to succeed and the other to wait for its retry');
    const event = await json<EventRecord>(['events', 'get', accepted.event_id]);
    expect(event).toMatchObject({ event_id: accepted.event_id, content_type: 'application/json', message_count: 2, payload: { invoice: 'in_44', amount: 5 } });

    const human = await cli(['events', 'get', accepted.event_id]);
    expectSuccess(human);
    expect(human.stdout).toMatch(new RegExp(`^Owner:\\s+${OWNER}$`, 'mu'));
    expect(human.stdout).toMatch(/^Fan-out: 2 messages, 1 pending_retry, 1 succeeded$/mu);
    expect(human.stdout).toMatch(/^ENDPOINT\s+MESSAGE\s+STATUS\s+ATTEMPTS\s+RESPONSE\s+ERROR$/mu);
    const row = (endpoint: string): string => {
      const message = accepted.messages.find((m) => m.endpoint_id === endpoint)!.message_id;
      return `^${endpoint}\\s+${message}\\s+`;
    };
    expect(human.stdout).toMatch(new RegExp(`${row(delivered)}succeeded\\s+1\\s+200$`, 'mu'));
    expect(human.stdout).toMatch(new RegExp(`${row(failing)}pending_retry\\s+1\\s+500\\s+HTTP 500$`, 'mu'));
    expect(human.stdout).toMatch(/^Payload\n\{\n {2}"invoice": "in_44",/mu);

    // Each message names its event.
    const message = accepted.messages[0]!.message_id;
    expect(await json<{ event_id: string }>(['messages', 'get', message])).toMatchObject({ event_id: accepted.event_id });
    expect((await cli(['messages', 'get', message])).stdout).toMatch(new RegExp(`^Event:\\s+${accepted.event_id}$`, 'mu'));
  });

  it('send --body sends text with its content type; an event no endpoint takes is kept with no messages', async () => {
    const csv = await file('report.csv', 'invoice,amount\nin_42,1999\n');
    const accepted = await json<Accepted>(['events', 'send', '--type', 'report.ready', '--owner', OWNER, '--channel', 'eu', '--body', `@${csv}`, '--content-type', 'text/csv']);
    expect(accepted.messages.map((m) => m.endpoint_id)).toEqual([euOnly]);
    const event = await json<EventRecord>(['events', 'get', accepted.event_id]);
    expect(event).toMatchObject({ content_type: 'text/csv', body: 'invoice,amount\nin_42,1999\n' });

    const nobody = await cli(['events', 'send', '--type', 'invoice.paid', '--owner', 'nobody-at-all', '--payload', '{"invoice":"in_0","amount":0}']);
    expectSuccess(nobody);
    expect(nobody.stdout).toMatch(/^Accepted event [0-9a-f-]{36} \(invoice\.paid, owner nobody-at-all\): no endpoint takes it; the event is kept\.$/mu);
    expect(nobody.stdout).toContain('hookrelay endpoints list --owner nobody-at-all --event-type invoice.paid');
  });

  it('human output of send is the table of endpoint and message', async () => {
    const result = await cli(['events', 'send', '--type', 'customer.created', '--owner', OWNER, '--channel', 'eu', '--payload', '{"customer":"cu_1"}']);
    expectSuccess(result);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^Accepted event [0-9a-f-]{36} \\(customer\\.created, owner ${OWNER}, channels eu\\): fanned out as 2 messages$`, 'u'));
    expect(lines[1]).toMatch(/^ENDPOINT\s+MESSAGE$/u);
    expect(lines.slice(2, 4).map((line) => line.split(/\s+/u)[0]).sort()).toEqual([failing, euOnly].sort());
    expect(lines[4]).toMatch(/^Follow the deliveries: hookrelay events get [0-9a-f-]{36}$/u);
  });

  it('--idempotency-key: a repeat answers the first event and fans out nothing again; another request is exit 5', async () => {
    const key = `invoice-${randomUUID()}`;
    const args = ['events', 'send', '--type', 'invoice.paid', '--owner', OWNER, '--channel', 'eu', '--channel', 'us', '--payload', '{"invoice":"in_45","amount":3}', '--idempotency-key', key];
    const first = await json<Accepted>(args);
    const again = await json<Accepted>(['events', 'send', '--type', 'invoice.paid', '--owner', OWNER, '--channel', 'us,eu', '--payload', '{"invoice":"in_45","amount":3}', '--idempotency-key', key]);
    expect(again).toEqual(first);
    expect((await json<EventRecord>(['events', 'get', first.event_id])).idempotency_key).toBe(key);
    expectJsonFailure(await cli([...args.slice(0, -3), '{"invoice":"in_46","amount":3}', '--idempotency-key', key, '--json']), 5, 'IDEMPOTENCY_CONFLICT');
  });

  it('checks its input before any request (exit 2, no request id), and passes on the server refusals', async () => {
    for (const [args, input] of [
      [['--type', 'x.y'], undefined],
      [['--type', 'x.y', '--payload', '{}', '--body', 'x'], undefined],
      [['--type', 'x.y', '--payload', 'not json'], undefined],
      [['--type', 'x.y', '--payload', `@${join(workDir, 'missing.json')}`], undefined],
      [['--type', 'x.y', '--payload', '@-'], ''],
      [['--payload', '{}'], undefined],
    ] as const) {
      const error = expectJsonFailure(await cli(['events', 'send', ...args, '--json'], input), 2, 'INVALID_ARGUMENTS');
      expect(error.request_id).toBeNull();
    }
    const reserved = expectJsonFailure(await cli(['events', 'send', '--type', 'hookrelay.message.failed', '--payload', '{}', '--json']), 2, 'INVALID_REQUEST');
    expect(reserved.message).toMatch(/^body\.event_type: /u);
    expectJsonFailure(await cli(['events', 'get', '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71', '--json']), 4, 'NOT_FOUND');
    expectJsonFailure(await cli(['events', 'get', 'not-an-id', '--json']), 2, 'INVALID_REQUEST');
  });

  it('list filters by --type, --owner, --since and --until, newest first, and pages', async () => {
    const since = new Date(Date.now() - 1000).toISOString();
    const first = await json<Accepted>(['events', 'send', '--type', 'shipment.sent', '--owner', OWNER, '--payload', '{"n":1}']);
    const second = await json<Accepted>(['events', 'send', '--type', 'shipment.sent', '--owner', OWNER, '--payload', '{"n":2}']);
    await json<Accepted>(['events', 'send', '--type', 'shipment.sent', '--owner', OTHER_OWNER, '--payload', '{"n":3}']);

    const page = await json<Page<{ event_id: string; event_type: string; owner_id: string; message_count: number }>>(['events', 'list', '--type', 'shipment.sent', '--owner', OWNER, '--since', since]);
    expect(page.data.map((e) => e.event_id)).toEqual([second.event_id, first.event_id]);
    expect(page.data[0]).toMatchObject({ event_type: 'shipment.sent', owner_id: OWNER, message_count: 0 });
    expect(page.next_cursor).toBeNull();
    const before = await json<Page<{ event_id: string }>>(['events', 'list', '--type', 'shipment.sent', '--owner', OWNER, '--until', since]);
    expect(before.data).toEqual([]);

    const table = await cli(['events', 'list', '--type', 'shipment.sent', '--owner', OWNER, '--limit', '1']);
    expectSuccess(table);
    expect(table.stdout.split('\n')[0]).toMatch(/^CREATED\s+EVENT\s+TYPE\s+OWNER\s+CHANNELS\s+MESSAGES$/u);
    expect(table.stdout).toMatch(new RegExp(`^\\S+\\s+${second.event_id}\\s+shipment\\.sent\\s+${OWNER}\\s+-\\s+0$`, 'mu'));
    expect(table.stderr).toMatch(new RegExp(`^More events: hookrelay events list --type shipment\\.sent --owner ${OWNER} --limit 1 --cursor \\S+$`, 'mu'));
    const all = await json<Page<{ event_id: string }>>(['events', 'list', '--type', 'shipment.sent', '--owner', OWNER, '--limit', '1', '--all']);
    expect(all.data.map((e) => e.event_id)).toEqual([second.event_id, first.event_id]);

    expectJsonFailure(await cli(['events', 'list', '--since', 'yesterday', '--json']), 2, 'INVALID_ARGUMENTS');
  });
});
