import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import { keyHint, newApiKey } from '@hookrelay/shared';
import { buildApp } from '../../src/app.js';
import { parseConfig } from '../../src/config.js';
import type { Database } from '../../src/db/database.js';
import { insertApiKey } from '../../src/db/api-keys.js';
import { insertProject } from '../../src/db/projects.js';
import { SecretBox, sha256Hex } from '../../src/security/crypto.js';
import type { Resolver } from '../../src/security/ssrf.js';
import type { PayloadStore } from '../../src/storage/payload-store.js';
import { createTestDatabase } from './database.js';
import type { DeliveryWorker, DeliveryWorkerOptions } from '../../src/delivery/worker.js';
import type { BulkJobWorker, BulkJobWorkerOptions } from '../../src/bulk/worker.js';
import type { RejectionRecorderOptions } from '../../src/ingest/rejections.js';

export interface TestProjectKey {
  projectId: string;
  apiKeyId: string;
  apiKey: string;
}

export interface TestResponse {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: any;
  raw: string;
}

export interface TestApp {
  app: FastifyInstance;
  db: Database;
  secretBox: SecretBox;
  /** The first project's key, used by `request` unless another is given. */
  main: TestProjectKey;
  createProject(name?: string): Promise<TestProjectKey>;
  request(method: string, url: string, options?: { body?: unknown; rawBody?: string; apiKey?: string | null; headers?: Record<string, string> }): Promise<TestResponse>;
  /** The delivery worker, when the app was created with `worker`. */
  worker: DeliveryWorker | undefined;
  /** The bulk job worker, when the app was created with `bulkJobs`. */
  bulkJobs: BulkJobWorker | undefined;
  close(): Promise<void>;
}

/** Every host name resolves to a public documentation-free address unless a test says otherwise. */
export const publicResolver: Resolver = async () => ['93.184.216.34'];

export async function createTestApp(
  options: {
    env?: Record<string, string>;
    resolveHost?: Resolver;
    db?: Database;
    payloadStore?: PayloadStore;
    /** Runs a delivery worker in the app's process (stopped by `close`), with these options. */
    worker?: boolean | DeliveryWorkerOptions;
    /** Runs the bulk job worker in the app's process (stopped by `close`), with these options over the configuration's. */
    bulkJobs?: boolean | Partial<BulkJobWorkerOptions>;
    /** The refused-request recorder's limits (default: the server's). */
    rejections?: RejectionRecorderOptions;
  } = {},
): Promise<TestApp> {
  const db = options.db ?? (await createTestDatabase());
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-test-'));
  // The API rate limit is off unless a test turns it on: tests call the API far faster than a client would.
  const config = parseConfig({ HOOKRELAY_DATA_DIR: dataDir, HOOKRELAY_LOG_LEVEL: 'silent', HOOKRELAY_API_RATE_LIMIT: '0', ...options.env });
  const secretBox = new SecretBox(randomBytes(32));
  const app = await buildApp(
    config,
    { db, secretBox, resolveHost: options.resolveHost ?? publicResolver, ...(options.payloadStore ? { payloadStore: options.payloadStore } : {}) },
    // A delivery worker only when the test asks for one.
    {
      logger: false,
      worker: options.worker ? (options.worker === true ? {} : options.worker) : false,
      bulkJobs: options.bulkJobs ? (options.bulkJobs === true ? {} : options.bulkJobs) : false,
      ...(options.rejections ? { rejections: options.rejections } : {}),
    },
  );
  await app.ready();

  const createProject = async (name = `project-${randomBytes(4).toString('hex')}`): Promise<TestProjectKey> => {
    const project = await insertProject(db.sql, name);
    const apiKey = newApiKey();
    const key = await insertApiKey(db.sql, { projectId: project.id, keyHash: sha256Hex(apiKey), keyHint: keyHint(apiKey) });
    return { projectId: project.id, apiKeyId: key.id, apiKey };
  };
  const main = await createProject();
  const worker = app.engines.worker;
  await worker?.start();
  const bulkJobs = app.engines.bulkJobs;
  await bulkJobs?.start();

  return {
    app,
    db,
    secretBox,
    main,
    worker,
    bulkJobs,
    createProject,
    async request(method, url, req = {}) {
      const headers: Record<string, string> = { ...req.headers };
      const apiKey = req.apiKey === undefined ? main.apiKey : req.apiKey;
      if (apiKey !== null) headers.authorization = `Bearer ${apiKey}`;
      let payload: string | undefined;
      if (req.rawBody !== undefined) payload = req.rawBody;
      else if (req.body !== undefined) {
        payload = JSON.stringify(req.body);
        headers['content-type'] ??= 'application/json';
      }
      const response = await app.inject({ method: method as 'GET', url, headers, ...(payload !== undefined ? { payload } : {}) });
      let body: unknown;
      try {
        body = response.body.length > 0 ? JSON.parse(response.body) : undefined;
      } catch {
        body = undefined;
      }
      return { status: response.statusCode, headers: response.headers, body, raw: response.body };
    },
    async close() {
      await app.close();
      if (!options.db) await db.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Asserts an error envelope `{ error: { code, message }, meta: { request_id } }` with the given status
 * and code; `messageIncludes` (when given) must appear in `error.message`. Returns the message.
 */
export function expectError(res: TestResponse, status: number, code: string, messageIncludes?: string): string {
  expect(res.status, res.raw).toBe(status);
  expect(res.body?.error?.code, res.raw).toBe(code);
  expect(typeof res.body.error.message).toBe('string');
  expect(res.body.data).toBeUndefined();
  expect(res.body.meta.request_id).toBe(res.headers['x-request-id']);
  if (messageIncludes !== undefined) expect(res.body.error.message).toContain(messageIncludes);
  return res.body.error.message as string;
}
