import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliResult } from './helpers/cli.js';
import { startDeliveryRig, type DeliveryRig } from './helpers/delivery-rig.js';
import { eventually, expectSuccess } from './helpers/expect-cli.js';
import { testResources } from './helpers/fixture.js';
import { createCliEndpoint, sendWebhook } from './helpers/listen.js';

/**
 * Bulk retries and replays through the built CLI against the real server (PGlite), in chunks of
 * two: `messages retry --endpoint … --dry-run` counts, `--json --wait` runs a job to its end and
 * prints it, and `inbound replay` reaches a running `listen`, in order. No TTY: the confirmation is
 * given with --yes. Outbound deliveries go to a local HTTPS receiver that answers 500 (one retry an
 * hour later), so the messages wait in pending_retry.
 */

interface Job {
  id: string;
  kind: string;
  status: string;
  matched: number;
  done: number;
  skipped: number;
  failed: number;
}

let rig: DeliveryRig;
const { configDir, localApp, cleanup, listen } = testResources();

const cli = (args: readonly string[]): Promise<CliResult> => rig.cli(args);
const json = <T>(args: readonly string[]): Promise<T> => rig.json<T>(args);

beforeAll(async () => {
  rig = await startDeliveryRig('bulk-jobs', { HOOKRELAY_BULK_CHUNK_SIZE: '2', HOOKRELAY_BULK_CHUNK_DELAY_MS: '20' });
});

afterAll(async () => {
  await cleanup();
  await rig?.stop();
});

describe('messages retry --endpoint … --since', () => {
  it('--dry-run counts the messages; --json --wait runs the job to its end, each message sent once more', async () => {
    const endpoint = (await json<{ id: string }>(['endpoints', 'create', '--url', `${rig.receiver.url}/fail-bulk`])).id;
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await json<{ message_id: string }>(['messages', 'send', '--endpoint', endpoint, '--data', `{"n":${i}}`])).message_id);
    for (const id of ids) {
      await eventually(async () => ((await json<{ status: string }>(['messages', 'get', id])).status === 'pending_retry' ? true : undefined), `message ${id} to wait for its retry`);
    }
    const filter = ['--endpoint', endpoint, '--since', '10m', '--status', 'pending_retry'];

    const counted = await cli(['messages', 'retry', ...filter, '--dry-run']);
    expectSuccess(counted);
    expect(counted.stdout).toBe('3 messages match, to retry.\n');
    expect(await json(['messages', 'retry', ...filter, '--dry-run'])).toEqual({ matched: 3 });
    expect(await json<{ data: Job[]; next_cursor: string | null }>(['jobs', 'list'])).toEqual({ data: [], next_cursor: null });

    const job = await json<Job>(['messages', 'retry', ...filter, '--wait']);
    expect(job).toMatchObject({ kind: 'outbound', status: 'done', matched: 3, done: 3, skipped: 0, failed: 0 });
    await eventually(async () => (ids.every((id) => rig.receiver.received.filter((r) => r.headers['webhook-id'] === id).length === 2) ? true : undefined), 'a second attempt of each message');

    const shown = await cli(['jobs', 'get', job.id]);
    expectSuccess(shown);
    expect(shown.stdout).toMatch(/^Status:\s+done$/mu);
    expect(shown.stdout).toMatch(/^Filter:\s+pending_retry, endpoint ep_[0-9a-f]{32}, created .+ to when the job started$/mu);
    expect((await json<{ data: Job[] }>(['jobs', 'list'])).data.map((j) => j.id)).toEqual([job.id]);
  });
});

describe('inbound replay', () => {
  it('reaches a running listen, the messages in the order they came', async () => {
    const app = await localApp();
    const endpoint = await createCliEndpoint(rig.server.url, rig.server.apiKey);
    const listener = listen([endpoint.id, '--forward-to', app.url], await configDir(), rig.env);
    await listener.waitForStderr(/connected \(websocket\)/u);
    for (let i = 0; i < 5; i++) await sendWebhook(rig.server.url, endpoint.token, { headers: [['Content-Type', 'application/json']], body: `{"n":${i}}` });
    await app.waitFor(5);

    const counted = await cli(['inbound', 'replay', endpoint.id, '--since', '10m', '--dry-run']);
    expectSuccess(counted);
    expect(counted.stdout).toBe('5 messages match, to replay.\n');
    const replayed = await cli(['inbound', 'replay', endpoint.id, '--since', '10m', '--yes']);
    expectSuccess(replayed);
    expect(replayed.stdout).toMatch(/^Job [0-9a-f-]{36} done: 5 of 5 replayed$/mu);
    expect(replayed.stderr).toMatch(/\[#{24}\] 5 \/ 5 {2}100%/u);

    await app.waitFor(10);
    const order = app.requests.map((r) => (JSON.parse(r.body.toString('utf8')) as { n: number }).n);
    expect(order).toEqual([0, 1, 2, 3, 4, 0, 1, 2, 3, 4]);
    expect(listener.running).toBe(true);
  });
});
