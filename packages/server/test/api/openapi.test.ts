import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

interface OpenApiDoc {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, { parameters?: { in: string; name: string }[]; requestBody?: unknown; responses: Record<string, unknown> }>>;
}

describe('GET /v1/openapi.json', () => {
  it('is an OpenAPI 3 document generated from the route schemas, served without a key', async () => {
    const res = await t.request('GET', '/v1/openapi.json', { apiKey: null });
    expect(res.status).toBe(200);
    const doc = res.body as OpenApiDoc;
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info.title).toBe('hookrelay API');
    const create = doc.paths['/v1/endpoints']?.post;
    expect(create?.requestBody).toBeDefined();
    expect(Object.keys(create!.responses)).toContain('201');
  });

  it('documents every /v1 route the server serves, with its path parameters', async () => {
    const doc = (await t.request('GET', '/v1/openapi.json')).body as OpenApiDoc;
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`)),
    );
    // Every documented /v1 operation is really served (the document cannot invent routes) ...
    for (const key of documented) {
      const [method, path] = key.split(' ') as [string, string];
      if (!path.startsWith('/v1/')) continue;
      expect(t.app.hasRoute({ method: method as 'GET', url: path.replace(/\{(\w+)\}/g, ':$1') }), `${key} is documented but not served`).toBe(true);
    }
    // ... and every operation of the API is documented.
    const expected = [
      'POST /v1/endpoints', 'GET /v1/endpoints', 'GET /v1/endpoints/{id}', 'PATCH /v1/endpoints/{id}', 'DELETE /v1/endpoints/{id}',
      'POST /v1/endpoints/{id}/pause', 'POST /v1/endpoints/{id}/resume', 'POST /v1/endpoints/{id}/rotate-secret',
      'POST /v1/inbound-endpoints', 'GET /v1/inbound-endpoints', 'GET /v1/inbound-endpoints/{id}', 'PATCH /v1/inbound-endpoints/{id}',
      'DELETE /v1/inbound-endpoints/{id}', 'GET /v1/inbound-endpoints/{id}/listen', 'POST /v1/inbound-endpoints/{id}/samples', 'GET /v1/inbound-messages/{id}',
      'POST /v1/inbound-messages/{id}/replay', 'POST /v1/inbound-messages/{id}/result', 'DELETE /v1/inbound-messages/{id}',
      'POST /v1/inbound-messages/delete-batch', 'GET /v1/inbound-logs',
      'POST /v1/messages', 'GET /v1/messages/{id}', 'GET /v1/messages/{id}/attempts', 'POST /v1/messages/{id}/retry',
      'DELETE /v1/messages/{id}', 'POST /v1/messages/delete-batch', 'GET /v1/logs',
      'POST /v1/events', 'GET /v1/events', 'GET /v1/events/{id}',
      'POST /v1/pull-endpoints', 'GET /v1/pull-endpoints', 'GET /v1/pull-endpoints/{id}', 'PATCH /v1/pull-endpoints/{id}',
      'DELETE /v1/pull-endpoints/{id}', 'POST /v1/pull-endpoints/{id}/pause', 'POST /v1/pull-endpoints/{id}/resume',
      'GET /v1/pull-endpoints/{id}/events', 'GET /v1/pull-endpoints/{id}/events/{event_id}', 'DELETE /v1/pull-endpoints/{id}/events/{event_id}',
      'POST /v1/pull-endpoints/{id}/events/delete-batch', 'POST /v1/pull-endpoints/{id}/events/delete-all', 'GET /v1/whoami',
      'POST /v1/event-types', 'GET /v1/event-types', 'GET /v1/event-types/{name}', 'PATCH /v1/event-types/{name}', 'DELETE /v1/event-types/{name}',
    ];
    for (const key of expected) {
      const [method, path] = key.split(' ') as [string, string];
      expect(t.app.hasRoute({ method: method as 'GET', url: path.replace(/\{(\w+)\}/g, ':$1') }), `${key} is not served`).toBe(true);
    }
    for (const key of expected) expect(documented.has(key), `${key} is not documented`).toBe(true);
    for (const [path, methods] of Object.entries(doc.paths)) {
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      for (const [method, operation] of Object.entries(methods)) {
        const params = (operation.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name);
        expect(params.sort(), `${method} ${path}`).toEqual([...names].sort());
      }
    }
  });
});
