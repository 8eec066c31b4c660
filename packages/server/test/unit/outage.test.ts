import Fastify, { type FastifyInstance } from 'fastify';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { AvailabilityGate, DatabaseUnreachableError, reconnectBackoffSeconds } from '../../src/db/availability.js';
import { isDatabaseUnavailable } from '../../src/db/errors.js';
import { AppError } from '../../src/errors.js';
import { Backoff } from '../../src/lib/backoff.js';
import { startSweepers } from '../../src/sweepers/runner.js';
import { registerErrorHandling } from '../../src/plugins/error-handler.js';

/**
 * The pieces that keep a database outage from hanging requests or flooding the log: the driver's
 * reconnect delay, the gate that fails queries at once while the database is down, the backoff of
 * background loops, and the error handler's 503 answers and throttled warning.
 */

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
const serverError = () => Object.assign(new Error('duplicate key value violates unique constraint "x"'), { code: '23505', severity: 'ERROR' });

describe('Backoff', () => {
  it('doubles from the first delay up to the cap, with ±25 % jitter, and starts over after reset', () => {
    const middle = new Backoff(500, 5000, () => 0.5);
    expect(Array.from({ length: 6 }, () => middle.next())).toEqual([500, 1000, 2000, 4000, 5000, 5000]);
    expect(middle.consecutiveFailures).toBe(6);
    middle.reset();
    expect(middle.next()).toBe(500);
    const low = new Backoff(500, 5000, () => 0);
    expect([low.next(), low.next()]).toEqual([375, 750]);
    const high = new Backoff(500, 5000, () => 1);
    expect(Array.from({ length: 5 }, () => high.next())).toEqual([625, 1250, 2500, 5000, 5000]);
  });

  it('stays finite after very many failures', () => {
    const backoff = new Backoff(500, 5000, () => 0.5);
    for (let i = 0; i < 2000; i++) backoff.next();
    expect(backoff.next()).toBe(5000);
  });
});

describe('the driver reconnect delay', () => {
  it('grows from 50 ms and never exceeds half a second', () => {
    expect([0, 1, 2, 3, 4, 10, 100].map(reconnectBackoffSeconds)).toEqual([0.05, 0.1, 0.2, 0.4, 0.5, 0.5, 0.5]);
  });
});

describe('AvailabilityGate', () => {
  it('lets queries through while the database answers, including ones that fail for other reasons', async () => {
    const gate = new AvailabilityGate();
    expect(await gate.run(async () => 1)).toBe(1);
    await expect(gate.run(async () => Promise.reject(serverError()))).rejects.toMatchObject({ code: '23505' });
    await expect(gate.run(async () => Promise.reject(new TypeError('a bug')))).rejects.toThrow('a bug');
    expect(gate.open).toBe(true);
  });

  it('after a connection failure: one probe at a time, every other query fails at once as unreachable', async () => {
    const gate = new AvailabilityGate();
    await expect(gate.run(async () => Promise.reject(refused()))).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(gate.open).toBe(false);

    let finishProbe!: (value: string) => void;
    let probeRan = false;
    const probe = gate.run(
      () =>
        new Promise<string>((resolve) => {
          probeRan = true;
          finishProbe = resolve;
        }),
    );
    expect(probeRan).toBe(true);
    let othersRan = 0;
    const others = await Promise.allSettled(Array.from({ length: 5 }, () => gate.run(async () => ++othersRan)));
    expect(othersRan).toBe(0);
    for (const other of others) {
      expect(other.status).toBe('rejected');
      const reason = (other as PromiseRejectedResult).reason as DatabaseUnreachableError;
      expect(reason).toBeInstanceOf(DatabaseUnreachableError);
      expect(reason.code).toBe('ECONNREFUSED');
      expect(reason.message).toContain('connect ECONNREFUSED');
      expect(isDatabaseUnavailable(reason)).toBe(true);
    }

    finishProbe('back');
    expect(await probe).toBe('back');
    expect(gate.open).toBe(true);
    expect(await Promise.all([gate.run(async () => 'a'), gate.run(async () => 'b')])).toEqual(['a', 'b']);
  });

  it('a probe that fails the same way keeps it closed; an error from the server itself opens it', async () => {
    const gate = new AvailabilityGate();
    await expect(gate.run(async () => Promise.reject(refused()))).rejects.toThrow();
    await expect(gate.run(async () => Promise.reject(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01', severity: 'FATAL' })))).rejects.toMatchObject({ code: '57P01' });
    expect(gate.open).toBe(false);
    await expect(gate.run(async () => 'reached')).resolves.toBe('reached');
    expect(gate.open).toBe(true);
    await expect(gate.run(async () => Promise.reject(refused()))).rejects.toThrow();
    await expect(gate.run(async () => Promise.reject(serverError()))).rejects.toMatchObject({ code: '23505' });
    expect(gate.open).toBe(true);
  });
});

describe('AvailabilityGate after a recovery', () => {
  it('a failure of a query that began before the last success does not close it again', async () => {
    const gate = new AvailabilityGate();
    let failLate!: (error: unknown) => void;
    const stale = gate.run(() => new Promise((_, reject) => (failLate = reject)));
    expect(await gate.run(async () => 'back')).toBe('back');
    failLate(refused());
    await expect(stale).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(gate.open).toBe(true);
    // One that begins after the success and fails the same way does.
    await expect(gate.run(async () => Promise.reject(refused()))).rejects.toThrow();
    expect(gate.open).toBe(false);
  });
});

describe('the error handler during a database outage', () => {
  let app: FastifyInstance | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  async function appThrowing(errors: Record<string, () => unknown>): Promise<{ app: FastifyInstance; logs: { level: number; msg: string; answered503?: number }[] }> {
    const logs: { level: number; msg: string; answered503?: number }[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logs.push(JSON.parse(chunk.toString()));
        done();
      },
    });
    app = Fastify({ logger: { level: 'info', stream }, disableRequestLogging: true });
    registerErrorHandling(app);
    for (const [name, make] of Object.entries(errors)) {
      app.get(`/${name}`, async () => {
        throw make();
      });
    }
    await app.ready();
    return { app, logs };
  }

  it('answers 503 SERVICE_UNAVAILABLE with Retry-After: 5 for every driver error that means "unreachable", wrapped or not', async () => {
    const codes = ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', '57P01', '57P03', '08006', '53300'];
    const errors: Record<string, () => unknown> = {
      unreachable: () => new DatabaseUnreachableError('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.5:5432'),
      wrapped: () => new Error('could not store the webhook', { cause: refused() }),
      readyz: () => new AppError('SERVICE_UNAVAILABLE', 'database is not reachable', { retryAfterSeconds: 5, cause: refused() }),
    };
    for (const code of codes) errors[code] = () => Object.assign(new Error(`driver says ${code} at 10.0.0.5:5432`), { code });
    const { app: server } = await appThrowing(errors);
    for (const name of Object.keys(errors)) {
      const res = await server.inject({ method: 'GET', url: `/${name}` });
      expect(res.statusCode, name).toBe(503);
      expect(res.headers['retry-after'], name).toBe('5');
      const body = res.json();
      expect(body.error.code, name).toBe('SERVICE_UNAVAILABLE');
      // Neither the driver's message nor the database's address reaches the client.
      expect(res.body, name).not.toContain('10.0.0.5');
      expect(res.body, name).not.toContain('driver');
    }
  });

  it('anything else is still a 500', async () => {
    const { app: server } = await appThrowing({ other: () => Object.assign(new Error('relation "x" does not exist'), { code: '42P01', severity: 'ERROR' }) });
    const res = await server.inject({ method: 'GET', url: '/other' });
    expect(res.statusCode).toBe(500);
    expect(res.json().error.code).toBe('INTERNAL_ERROR');
  });

  it('logs one warning for a burst of failing requests, not one per request', async () => {
    const { app: server, logs } = await appThrowing({ down: refused, ready: () => new AppError('SERVICE_UNAVAILABLE', 'database is not reachable', { cause: refused() }) });
    for (let i = 0; i < 30; i++) expect((await server.inject({ method: 'GET', url: i % 3 === 0 ? '/ready' : '/down' })).statusCode).toBe(503);
    expect(logs.map((l) => l.msg)).toEqual(['database is not reachable: answering 503 SERVICE_UNAVAILABLE']);
    expect(logs[0]!.level).toBe(40);
    expect(logs[0]!.answered503).toBe(1);
  });
});

describe('sweepers while the database is down', () => {
  it('log the outage once when it begins and once when it ends, and back off meanwhile', async () => {
    const lines: string[] = [];
    const log = { info: (_o: unknown, msg?: string) => lines.push(`info ${msg ?? _o}`), warn: (_o: unknown, msg?: string) => lines.push(`warn ${msg}`), error: (_o: unknown, msg?: string) => lines.push(`error ${msg}`) };
    let down = true;
    const rounds: number[] = [];
    const db = {
      sql: {
        begin: async () => {
          rounds.push(Date.now());
          if (down) throw refused();
          return null;
        },
      },
    };
    const sweeper = { name: 'test', lockKey: 1, run: async () => 0 };
    const handle = startSweepers(db as never, { payloadStore: {} as never }, log as never, 20, [sweeper]);
    const started = Date.now();
    while (rounds.length < 5 && Date.now() - started < 5000) await new Promise((r) => setTimeout(r, 5));
    down = false;
    const recoveredAt = rounds.length;
    while (!lines.includes('info sweepers: database reachable again') && Date.now() - started < 10_000) await new Promise((r) => setTimeout(r, 5));
    await handle.stop();
    expect(lines).toEqual(['warn sweepers: database unavailable; retrying with backoff', 'info sweepers: database reachable again']);
    // 20 ms, then about 40, 80, 160 ms between failed rounds (±25 %): each wait longer than the last.
    const gaps = rounds.slice(1, recoveredAt).map((at, i) => at - rounds[i]!);
    expect(gaps.length).toBeGreaterThanOrEqual(3);
    expect(gaps[gaps.length - 1]!).toBeGreaterThan(gaps[0]! * 2);
  });
});
