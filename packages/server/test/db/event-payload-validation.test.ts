import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { OPERATIONAL_EVENT_TYPES } from '@hookrelay/shared';
import { insertEventType, updateEventType } from '../../src/db/event-types.js';
import { EventSchemas } from '../../src/events/event-schemas.js';
import { validateEventPayload } from '../../src/events/payload-validation.js';
import { EventTypeReads } from '../../src/events/type-reads.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { interceptSql } from '../helpers/database.js';

/**
 * validateEventPayload, the check of an event's payload against its type in the catalogue, on the
 * database (the events route that calls it answers its error as it is).
 */

let t: TestApp;
let projectId: string;
beforeAll(async () => {
  t = await createTestApp();
  projectId = t.main.projectId;
  const base = { projectId, description: '', example: null, archived: false };
  const amount = { type: 'object', required: ['amount'], properties: { amount: { type: 'integer', minimum: 0 } } };
  await insertEventType(t.db.sql, { ...base, name: 'payment.made', schema: amount });
  await insertEventType(t.db.sql, { ...base, name: 'payment.old', schema: amount, archived: true });
  await insertEventType(t.db.sql, { ...base, name: 'free.form', schema: null });
});
afterAll(async () => {
  await t?.close();
});

const deps = (eventSchemas = new EventSchemas()) => ({ types: new EventTypeReads(t.db.sql), eventSchemas });

describe('validateEventPayload', () => {
  it('passes a payload that matches its type’s schema', async () => {
    expect(await validateEventPayload(deps(), projectId, 'payment.made', { amount: 5 })).toEqual({ ok: true });
  });

  it('refuses one that does not: INVALID_REQUEST naming body.payload, the JSON pointer and the rule', async () => {
    const result = await validateEventPayload(deps(), projectId, 'payment.made', { amount: -1 });
    if (result.ok) throw new Error('expected a refusal');
    expect(result.failure).toEqual({ pointer: '/amount', keyword: 'minimum', message: 'must be >= 0' });
    expect(result.error.code).toBe('INVALID_REQUEST');
    expect(result.error.message).toBe('body.payload: does not match the schema of event type "payment.made" at /amount: must be >= 0 (minimum)');
    expect(result.error.details).toEqual([{ path: 'body.payload', message: 'does not match the schema of event type "payment.made" at /amount: must be >= 0 (minimum)' }]);

    const missing = await validateEventPayload(deps(), projectId, 'payment.made', 'not an object', 'body.events.3.payload');
    if (missing.ok) throw new Error('expected a refusal');
    expect(missing.error.message).toBe('body.events.3.payload: does not match the schema of event type "payment.made" at the top level: must be object (type)');
  });

  it('still checks the payloads of an archived type', async () => {
    expect((await validateEventPayload(deps(), projectId, 'payment.old', { amount: 'x' })).ok).toBe(false);
    expect((await validateEventPayload(deps(), projectId, 'payment.old', { amount: 1 })).ok).toBe(true);
  });

  it('lets through an event without a type, of a type not in the catalogue, or of a type without a schema', async () => {
    for (const eventType of [null, undefined, 'not.in.catalogue', 'free.form']) {
      expect(await validateEventPayload(deps(), projectId, eventType, { anything: [1, 2] }), String(eventType)).toEqual({ ok: true });
    }
  });

  it('looks in the project’s own catalogue only', async () => {
    const other = await t.createProject();
    expect(await validateEventPayload(deps(), other.projectId, 'payment.made', { amount: -1 })).toEqual({ ok: true });
  });

  it("checks hookrelay's own types against their built-in schemas", async () => {
    for (const type of OPERATIONAL_EVENT_TYPES) {
      expect(await validateEventPayload(deps(), projectId, type.name, type.example), type.name).toEqual({ ok: true });
      const result = await validateEventPayload(deps(), projectId, type.name, { ...(type.example as object), endpoint_id: 7 });
      expect(result.ok, type.name).toBe(false);
      if (!result.ok) expect(result.failure).toMatchObject({ pointer: '/endpoint_id', keyword: 'type' });
    }
  });

  it('compiles a type’s schema once per revision, and sees a change made elsewhere at the next check', async () => {
    const eventSchemas = new EventSchemas();
    const compile = vi.spyOn(eventSchemas, 'compile');
    await insertEventType(t.db.sql, { projectId, name: 'revised', description: '', schema: { type: 'string' }, example: null, archived: false });
    for (let i = 0; i < 3; i++) expect(await validateEventPayload(deps(eventSchemas), projectId, 'revised', 'text')).toEqual({ ok: true });
    expect(compile).toHaveBeenCalledTimes(1);

    // Another process's PATCH: only the database knows.
    await updateEventType(t.db.sql, projectId, 'revised', { schema: { type: 'integer' } });
    expect((await validateEventPayload(deps(eventSchemas), projectId, 'revised', 'text')).ok).toBe(false);
    expect(await validateEventPayload(deps(eventSchemas), projectId, 'revised', 12)).toEqual({ ok: true });
    expect(compile).toHaveBeenCalledTimes(2);

    await updateEventType(t.db.sql, projectId, 'revised', { schema: null });
    expect(await validateEventPayload(deps(eventSchemas), projectId, 'revised', 'text again')).toEqual({ ok: true });
    expect(eventSchemas.cached(projectId, 'revised')).toBeUndefined();
    expect(compile).toHaveBeenCalledTimes(2);
  });

  it('checks that arrive together share one read, each answered for its own project and type', async () => {
    const other = await t.createProject();
    const statements: string[] = [];
    const sql = interceptSql(t.db.sql, (strings, _values, run) => {
      statements.push(strings[0]!.trim().split(/\s+/)[0]!);
      return run();
    });
    const shared = { types: new EventTypeReads(sql), eventSchemas: new EventSchemas() };
    const results = await Promise.all([
      validateEventPayload(shared, projectId, 'payment.made', { amount: 1 }),
      validateEventPayload(shared, projectId, 'payment.made', { amount: -1 }),
      validateEventPayload(shared, projectId, 'payment.old', { amount: 'x' }),
      validateEventPayload(shared, projectId, 'free.form', 'anything'),
      validateEventPayload(shared, projectId, 'not.in.catalogue', 'anything'),
      validateEventPayload(shared, other.projectId, 'payment.made', { amount: -1 }),
    ]);
    expect(results.map((r) => r.ok)).toEqual([true, false, false, true, true, true]);
    expect(statements).toEqual(['SELECT']);
    // The next checks read again: a change made meanwhile is seen.
    await updateEventType(t.db.sql, projectId, 'free.form', { schema: { type: 'number' } });
    expect((await validateEventPayload(shared, projectId, 'free.form', 'anything')).ok).toBe(false);
    expect(statements).toEqual(['SELECT', 'SELECT']);
    await updateEventType(t.db.sql, projectId, 'free.form', { schema: null });
  });

  it('uses the schema the catalogue route compiled, without compiling it again', async () => {
    const res = await t.request('POST', '/v1/event-types', { body: { name: 'via.route', schema: { type: 'boolean' } } });
    expect(res.status, res.raw).toBe(201);
    const compile = vi.spyOn(t.app.services.eventSchemas, 'compile');
    try {
      expect((await validateEventPayload(deps(t.app.services.eventSchemas), projectId, 'via.route', 'no')).ok).toBe(false);
      expect(await validateEventPayload(deps(t.app.services.eventSchemas), projectId, 'via.route', true)).toEqual({ ok: true });
      expect(compile).not.toHaveBeenCalled();
      // A PATCH of the description keeps the compiled schema under the new revision.
      expect((await t.request('PATCH', '/v1/event-types/via.route', { body: { description: 'yes or no' } })).status).toBe(200);
      expect((await validateEventPayload(deps(t.app.services.eventSchemas), projectId, 'via.route', 1)).ok).toBe(false);
      expect(compile).not.toHaveBeenCalled();
    } finally {
      compile.mockRestore();
    }
  });
});
