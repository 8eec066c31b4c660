import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe('GET /v1/whoami', () => {
  it('names the project and key behind the API key', async () => {
    const res = await t.request('GET', '/v1/whoami');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ project_id: t.main.projectId, project_name: expect.any(String), api_key_id: t.main.apiKeyId });
    expect(res.body.meta.request_id).toBe(res.headers['x-request-id']);
  });
});
