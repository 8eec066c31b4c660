import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newSecretToken, newUuidv7 } from '@hookrelay/shared';
import type { Database } from '../../src/db/database.js';
import { insertProject } from '../../src/db/projects.js';
import { IngestBatcher, type IngestItem } from '../../src/ingest/batcher.js';
import { DatabasePayloadStore } from '../../src/storage/payload-store.js';
import { sha256Hex } from '../../src/security/crypto.js';
import { createTestDatabase } from '../helpers/database.js';

let db: Database;
let projectId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  projectId = (await insertProject(db.sql, 'batcher')).id;
});
afterAll(async () => {
  await db?.close();
});

async function endpoint(): Promise<string> {
  const id = newUuidv7();
  const token = newSecretToken();
  await db.sql`
    INSERT INTO inbound_endpoints (id, project_id, name, mode, secret_token_encrypted, secret_token_hash)
    VALUES (${id}, ${projectId}, 'batcher', 'cli', 'unused', ${sha256Hex(token)})`;
  return id;
}

function item(endpointId: string, n: number): IngestItem {
  const body = Buffer.from(`{"n":${n}}`);
  return {
    endpointId,
    projectId,
    method: 'POST',
    path: '/',
    query: '',
    contentType: 'application/json',
    rawHeaders: [['content-type', 'application/json']],
    body,
    sha256: sha256Hex(body),
    idempotencyKey: null,
    receivedAt: new Date(),
  };
}

describe('IngestBatcher with several transactions in flight', () => {
  it('stores every webhook once and keeps each endpoint’s ids growing in commit order', async () => {
    const endpoints = [await endpoint(), await endpoint(), await endpoint()];
    const batcher = new IngestBatcher(db, new DatabasePayloadStore(), { maxConcurrent: 4, maxBatch: 7 });
    const outcomes = await Promise.all(Array.from({ length: 210 }, (_, n) => batcher.submit(item(endpoints[n % 3]!, n))));
    await batcher.idle();
    expect(outcomes.every((o) => o.kind === 'stored')).toBe(true);
    for (const endpointId of endpoints) {
      const rows = await db.sql<{ id: string }>`SELECT id FROM inbound_messages WHERE inbound_endpoint_id = ${endpointId} ORDER BY id`;
      expect(rows).toHaveLength(70);
      const [last] = await db.sql<{ last_message_id: string }>`SELECT last_message_id FROM inbound_endpoints WHERE id = ${endpointId}`;
      expect(last!.last_message_id).toBe(rows[rows.length - 1]!.id);
    }
    const [payloads] = await db.sql<{ n: number }>`SELECT count(*)::int AS n FROM payloads`;
    expect(payloads!.n).toBe(210);
  });
});
