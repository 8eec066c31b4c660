import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { FixedWindowStore } from '../../src/plugins/rate-limit.js';
import { createTestApp, expectError, type TestApp, type TestProjectKey, type TestResponse } from '../helpers/app.js';
import { createTestDatabase, interceptSql } from '../helpers/database.js';
import { createPull, ingestPull } from '../helpers/pull.js';

/** The per-API-key request limit of the /v1 API (HOOKRELAY_API_RATE_LIMIT / _BURST). */

let limited: TestApp;
let unlimited: TestApp;
beforeAll(async () => {
  [limited, unlimited] = await Promise.all([
    createTestApp({ env: { HOOKRELAY_API_RATE_LIMIT: '5', HOOKRELAY_API_RATE_BURST: '5' } }),
    createTestApp({ env: { HOOKRELAY_API_RATE_LIMIT: '0' } }),
  ]);
});
afterAll(async () => {
  await Promise.all([limited?.close(), unlimited?.close()]);
});

const whoami = (t: TestApp, key: TestProjectKey) => t.request('GET', '/v1/whoami', { apiKey: key.apiKey });

/** `n` requests of one key at once; their statuses in ascending order. */
async function burst(t: TestApp, key: TestProjectKey, n: number): Promise<{ statuses: number[]; responses: TestResponse[] }> {
  const responses = await Promise.all(Array.from({ length: n }, () => whoami(t, key)));
  return { statuses: responses.map((r) => r.status).sort((a, b) => a - b), responses };
}

function retryAfterOf(res: TestResponse): number {
  const header = String(res.headers['retry-after']);
  expect(header).toMatch(/^\d+$/);
  return Number(header);
}

describe('HOOKRELAY_API_RATE_LIMIT=5, HOOKRELAY_API_RATE_BURST=5', () => {
  it('answers the 6th request of a burst 429 RATE_LIMITED in the error envelope, with Retry-After', async () => {
    const key = await limited.createProject();
    const { statuses, responses } = await burst(limited, key, 6);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const refused = responses.find((r) => r.status === 429)!;
    const message = expectError(refused, 429, 'RATE_LIMITED');
    expect(Object.keys(refused.body.error)).toEqual(['code', 'message']);
    expect(message).toBe('rate limit exceeded: at most 5 requests/s per API key (bursts of 5); retry in 1 s');
    // The window is burst / rate = 1 s, so at most 1 s is left of it.
    expect(retryAfterOf(refused)).toBe(1);
    expect(refused.headers['x-ratelimit-limit']).toBe('5');
    expect(refused.headers['x-ratelimit-remaining']).toBe('0');
    // The allowed ones say how much is left.
    const remaining = responses.filter((r) => r.status === 200).map((r) => Number(r.headers['x-ratelimit-remaining'])).sort();
    expect(remaining).toEqual([0, 1, 2, 3, 4]);
  });

  it('limits each API key on its own', async () => {
    const a = await limited.createProject();
    const b = await limited.createProject();
    expect((await burst(limited, a, 7)).statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    // a is spent; b still has its whole burst, and a is still refused.
    expect((await burst(limited, b, 5)).statuses).toEqual([200, 200, 200, 200, 200]);
    expectError(await whoami(limited, a), 429, 'RATE_LIMITED');
  });

  it('counts no request that failed authentication: a wrong key gets 401, never 429', async () => {
    const key = await limited.createProject();
    const wrong = await Promise.all(
      Array.from({ length: 20 }, () => limited.request('GET', '/v1/whoami', { apiKey: `hr_${'0'.repeat(40)}` })),
    );
    for (const res of wrong) expectError(res, 401, 'UNAUTHORIZED');
    const missing = await limited.request('GET', '/v1/whoami', { apiKey: null });
    expectError(missing, 401, 'UNAUTHORIZED');
    expect((await burst(limited, key, 5)).statuses).toEqual([200, 200, 200, 200, 200]);
  });

  it('never limits ingestion into the same project, nor the health probes and /metrics', async () => {
    const key = await limited.createProject();
    const inbound = await limited.request('POST', '/v1/inbound-endpoints', { apiKey: key.apiKey, body: { name: 'rate limit', mode: 'cli' } });
    expect(inbound.status, inbound.raw).toBe(201);
    const pull = await createPull(limited, {}, key.apiKey);
    // Two requests spent on the set-up; spend the rest of the burst and more.
    const spent = await burst(limited, key, 5);
    expect(spent.statuses).toEqual([200, 200, 200, 429, 429]);

    const ingests = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        limited.app.inject({ method: 'POST', url: `/in/${inbound.body.data.secret_token}/hook`, headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ i }) }),
      ),
    );
    expect(ingests.map((r) => r.statusCode)).toEqual(Array.from({ length: 20 }, () => 200));
    const pulls = await Promise.all(Array.from({ length: 20 }, (_, i) => ingestPull(limited, pull, { body: JSON.stringify({ i }) })));
    expect(pulls.map((r) => r.statusCode)).toEqual(Array.from({ length: 20 }, () => 200));
    for (const r of [...ingests, ...pulls]) expect(r.headers['x-ratelimit-limit']).toBeUndefined();
    const [stored] = await limited.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM inbound_messages WHERE inbound_endpoint_id = ${inbound.body.data.id}`;
    expect(stored!.n).toBe(20);

    const probeUrls = ['/healthz', '/readyz', '/metrics'].flatMap((url) => Array.from({ length: 7 }, () => url));
    const probes = await Promise.all(probeUrls.map((url) => limited.app.inject({ method: 'GET', url })));
    expect(probes.map((r) => `${r.statusCode} ${r.headers['x-ratelimit-limit'] ?? ''}`)).toEqual(probeUrls.map(() => '200 '));
  });

  it('lets the key through again once Retry-After has passed', async () => {
    const key = await limited.createProject();
    const { responses } = await burst(limited, key, 6);
    const refused = responses.find((r) => r.status === 429);
    expect(refused, 'the 6th request was refused').toBeDefined();
    const retryAfter = retryAfterOf(refused!);
    expect(retryAfter).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000 + 50));
    expect((await burst(limited, key, 5)).statuses).toEqual([200, 200, 200, 200, 200]);
  });
});

describe('requests of one key that finish authentication in the same tick', () => {
  it('are counted one by one: 5 of 7 pass, and each says how much is left', async () => {
    const db = await createTestDatabase();
    // The key lookups are held until all 7 have their row, then answered together, as one
    // pipelined read of the connection answers them under load.
    let held: Array<() => void> = [];
    let holding = 0;
    let allHeld!: () => void;
    const allArrived = new Promise<void>((resolve) => (allHeld = resolve));
    const sql = interceptSql(db.sql, async (strings, _values, run) => {
      if (holding === 0 || !strings.join('?').includes('FROM api_keys k JOIN projects p')) return run();
      const rows = await run();
      await new Promise<void>((resolve) => {
        held.push(resolve);
        if (held.length === holding) allHeld();
      });
      return rows;
    });
    const gated = await createTestApp({ env: { HOOKRELAY_API_RATE_LIMIT: '5', HOOKRELAY_API_RATE_BURST: '5' }, db: { ...db, sql } });
    try {
      const key = await gated.createProject();
      holding = 7;
      const responses = Promise.all(Array.from({ length: 7 }, () => whoami(gated, key)));
      await allArrived;
      for (const release of held) release();
      held = [];
      const answered = await responses;
      expect(answered.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 429, 429]);
      const remaining = answered.filter((r) => r.status === 200).map((r) => Number(r.headers['x-ratelimit-remaining'])).sort();
      expect(remaining).toEqual([0, 1, 2, 3, 4]);
    } finally {
      await gated.close();
      await db.close();
    }
  });
});

describe('FixedWindowStore', () => {
  const incr = (store: FixedWindowStore, key: string) => {
    let result: { current: number; ttl: number } | undefined;
    store.incr(key, (_error, r) => (result = r));
    return result!;
  };

  it('answers each increment with its own count, which later increments leave alone', () => {
    let now = 1_000;
    const store = new FixedWindowStore({ timeWindow: 1_000 }, () => now);
    const first = incr(store, 'a');
    const second = incr(store, 'a');
    expect(first).toEqual({ current: 1, ttl: 1_000 });
    now += 400;
    expect(incr(store, 'a')).toEqual({ current: 3, ttl: 600 });
    expect(incr(store, 'b')).toEqual({ current: 1, ttl: 1_000 });
    expect(second).toEqual({ current: 2, ttl: 1_000 });
    now += 600;
    expect(incr(store, 'a')).toEqual({ current: 1, ttl: 1_000 });
  });

  it('forgets the windows that have ended', () => {
    let now = 0;
    const store = new FixedWindowStore({ timeWindow: 1_000 }, () => now);
    for (let i = 0; i < 100; i++) incr(store, `key-${i}`);
    expect(store.size).toBe(100);
    now = 1_500;
    incr(store, 'late');
    expect(store.size).toBe(1);
  });
});

describe('HOOKRELAY_API_RATE_LIMIT=0', () => {
  it('is off: 100 requests of one key at once all succeed, with no rate-limit headers', async () => {
    const key = await unlimited.createProject();
    const { statuses, responses } = await burst(unlimited, key, 100);
    expect(statuses).toEqual(Array.from({ length: 100 }, () => 200));
    expect(responses[0]!.headers['x-ratelimit-limit']).toBeUndefined();
  });
});

describe('configuration', () => {
  const parse = (env: Record<string, string>) => parseConfig({ HOOKRELAY_DATA_DIR: '/tmp/hookrelay-unused', ...env });

  it('defaults to 200 requests per second per key, a burst of twice the rate, and an empty value means the default', () => {
    expect(parse({})).toMatchObject({ apiRateLimit: 200, apiRateBurst: 400 });
    expect(parse({ HOOKRELAY_API_RATE_LIMIT: '', HOOKRELAY_API_RATE_BURST: '' })).toMatchObject({ apiRateLimit: 200, apiRateBurst: 400 });
    expect(parse({ HOOKRELAY_API_RATE_LIMIT: '50' })).toMatchObject({ apiRateLimit: 50, apiRateBurst: 100 });
    expect(parse({ HOOKRELAY_API_RATE_LIMIT: '50', HOOKRELAY_API_RATE_BURST: '7' })).toMatchObject({ apiRateLimit: 50, apiRateBurst: 7 });
    expect(parse({ HOOKRELAY_API_RATE_LIMIT: '0' }).apiRateLimit).toBe(0);
  });

  it('refuses a negative or fractional rate and a burst of 0', () => {
    expect(() => parse({ HOOKRELAY_API_RATE_LIMIT: '-1' })).toThrow('HOOKRELAY_API_RATE_LIMIT must be 0 or more');
    expect(() => parse({ HOOKRELAY_API_RATE_LIMIT: '2.5' })).toThrow('HOOKRELAY_API_RATE_LIMIT must be an integer');
    expect(() => parse({ HOOKRELAY_API_RATE_BURST: '0' })).toThrow('HOOKRELAY_API_RATE_BURST must be positive');
  });
});
