#!/usr/bin/env node
// What one inbound commit costs PostgreSQL at a low rate, part by part. Each variant is one
// autocommit statement, sent from a pool like the server's (10 connections, prepared statements)
// and timed in this process, on a durable throwaway PostgreSQL migrated by the real server. One
// call every 1/--rate s, the variants in turn, so that the machine's drift hits all of them alike.
//
//   node bench/commit-parts.mjs [--rate 50] [--calls 500] [--only a,b] [--sql file.sql,…] [--functions f,…]
//   node bench/commit-parts.mjs --cpu [--workers 2] [--seconds 4] [--rounds 2] [--only a,b]
//
// Variants: SELECT 1 (a round trip); the floor's INSERT of a 1 KiB body (bench/floor); the ordered
// floor's store (bench/floor/ordered-store.mjs: the endpoint's order and a message row); the message
// row alone, with the foreign key to its endpoint that migration 010 dropped, and with the body in
// it (copies of inbound_messages); the endpoint's last id alone and after its row lock; the message
// row and its payload; the same plus the endpoint's last id; storeInboundOne's statement simplified
// (src/db/ingest.ts: the last id with its row lock, message and payload), also into the copies and
// with the lock taken first; storeInboundOne itself (the server's built module) for a forward and
// for a cli endpoint; hookrelay_store_inbound_batch (packages/server/sql/, as the server applied it)
// with one webhook, with two and with four. --sql runs files first (say, another body of the
// function under another name) and --functions names functions of hookrelay_store_inbound_batch's
// signature to call with one webhook (and with two).
// --only keeps the variants named. Prints p50, p90 and mean per variant, in ms. --cpu measures
// throughput instead: each variant for --seconds, --workers calls at a time back to back, variants
// in turn for --rounds; it prints calls/s and PostgreSQL's CPU per webhook (all its processes,
// /proc), what a busy ingest pays per webhook for each part of the commit.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { createOrderedTables, storeOrdered } from './floor/ordered-store.mjs';
import { bodyFor, build, cleanup, cleanups, createInboundEndpoint, delay, fail, root, startDurablePg, startServer, treeCpuMs, usageText, watchdog } from './lib.mjs';

const { values: args } = parseArgs({
  options: {
    rate: { type: 'string', default: '50' },
    calls: { type: 'string', default: '500' },
    only: { type: 'string', default: '' },
    sql: { type: 'string', default: '' },
    functions: { type: 'string', default: '' },
    cpu: { type: 'boolean', default: false },
    workers: { type: 'string', default: '2' },
    seconds: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '2' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  process.stdout.write(usageText(import.meta.url, 24));
  process.exit(0);
}
const list = (text) => text.split(',').map((s) => s.trim()).filter(Boolean);
const rate = Number(args.rate);
const calls = Number(args.calls);
const workers = Number(args.workers);
const seconds = Number(args.seconds);
const rounds = Number(args.rounds);
const positiveInts = [calls, workers, rounds].every((n) => Number.isInteger(n) && n > 0);
if (!(rate > 0) || !(seconds > 0) || !positiveInts) {
  process.stderr.write('usage: --rate R (>0) --calls N (>0); --cpu --workers W (>0) --seconds S (>0) --rounds N (>0)\n');
  process.exit(2);
}

async function main() {
  build(['packages/shared', 'packages/server']);
  const { pg, postmasterPid } = await startDurablePg();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-bench-parts-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const server = await startServer({ databaseUrl: pg.url, dataDir });
  const { id: endpointId } = await createInboundEndpoint(server.url, server.apiKey, 'cli');
  const { id: otherEndpointId } = await createInboundEndpoint(server.url, server.apiKey, 'cli');
  const moreEndpointIds = [(await createInboundEndpoint(server.url, server.apiKey, 'cli')).id, (await createInboundEndpoint(server.url, server.apiKey, 'cli')).id];
  const sql = postgres(pg.url, { max: 10, onnotice: () => {} });
  cleanups.push(() => sql.end({ timeout: 5 }));
  // The server's own modules, built above: its database layer over a pool of the same size.
  const load = (file) => import(pathToFileURL(path.join(root, 'packages/server/dist', file)).href);
  const { openPostgres } = await load('db/database.js');
  const { storeInboundOne } = await load('db/ingest.js');
  const serverDb = openPostgres({ url: pg.url, poolSize: 10 });
  cleanups.push(() => serverDb.close());
  await sql`CREATE TABLE floor_messages (id bigserial PRIMARY KEY, body bytea NOT NULL)`;
  await createOrderedTables(sql, 1);
  // inbound_messages as it is (columns, defaults, indexes) with the body in the row.
  await sql`CREATE TABLE bench_message_rows (LIKE inbound_messages INCLUDING ALL)`;
  await sql`ALTER TABLE bench_message_rows ADD COLUMN body bytea`;
  await sql`CREATE TABLE bench_message_rows_fk (LIKE inbound_messages INCLUDING ALL)`;
  await sql`ALTER TABLE bench_message_rows_fk ADD FOREIGN KEY (inbound_endpoint_id) REFERENCES inbound_endpoints (id)`;
  for (const file of list(args.sql)) await sql.unsafe(readFileSync(file, 'utf8'));
  const [{ project_id: projectId }] = await sql`SELECT project_id FROM inbound_endpoints WHERE id = ${endpointId}`;

  const rawHeaders = [['host', '127.0.0.1'], ['content-type', 'application/json'], ['content-length', '1024'], ['user-agent', 'bench']];
  const body = bodyFor(1);
  const sha256 = createHash('sha256').update(body).digest('hex');
  let counter = 0;
  // Growing UUIDv7-shaped ids, far enough apart that an id the function placed after another never
  // meets a later proposal.
  const nextId = () => {
    const ms = Date.now().toString(16).padStart(12, '0');
    return `${ms.slice(0, 8)}-${ms.slice(8)}-7000-8000-${(counter += 1000).toString(16).padStart(12, '0')}`;
  };
  const batchItem = (n, endpoint, id) => ({
    n, ord: n, id, endpoint_id: endpoint, project_id: projectId, method: 'POST', path: '', query: '', content_type: 'application/json',
    size_bytes: body.length, sha256, raw_headers: rawHeaders, idempotency_key: null, received_at: new Date(), body_offset: n * body.length,
  });
  const keyExpiry = () => new Date(Date.now() + 86_400_000).toISOString();
  const storeBatch = (fn, items) => sql`
    SELECT ord, outcome, message_id, endpoint_id, previous_last_id
    FROM ${sql(fn)}(${items}::jsonb, ${Buffer.concat(items.map(() => body))}::bytea, ${keyExpiry()}::text::timestamptz)`;

  // storeInboundOne's statement (src/db/ingest.ts), simplified, with the message row in `table`, and
  // its body in that row (`bodyInRow`, a table with a body column) instead of a payload row. The
  // endpoint row is locked by the UPDATE of its last id, which answers the id before it (migration
  // 009), or with `lockFirst` by a SELECT … FOR UPDATE before that UPDATE, as before migration 009.
  const oneStatementStore = (table, bodyInRow, lockFirst = false) => {
    const id = nextId();
    const message = bodyInRow
      ? sql`INSERT INTO ${sql(table)} (id, project_id, inbound_endpoint_id, method, path, query, content_type, size_bytes, payload_sha256, raw_headers, payload_key, received_at, updated_at, body)
          SELECT f.final_id, ${projectId}, f.id, 'POST', '', '', 'application/json', 1024, ${sha256}, ${rawHeaders}::jsonb, NULL, now(), now(), ${body}::bytea FROM f RETURNING id`
      : sql`INSERT INTO ${sql(table)} (id, project_id, inbound_endpoint_id, method, path, query, content_type, size_bytes, payload_sha256, raw_headers, payload_key, received_at, updated_at)
          SELECT f.final_id, ${projectId}, f.id, 'POST', '', '', 'application/json', 1024, ${sha256}, ${rawHeaders}::jsonb, ${'inbound/' + id}, now(), now() FROM f RETURNING id`;
    const payload = bodyInRow ? sql`` : sql`, p AS (INSERT INTO payloads (key, data) SELECT ${'inbound/' + id}, ${body}::bytea FROM f)`;
    if (lockFirst) {
      return sql`
        WITH e AS (
          SELECT id, mode, paused, last_message_id, (deleted_at IS NOT NULL OR (expires_at IS NOT NULL AND expires_at <= now())) AS gone
          FROM inbound_endpoints WHERE id = ${endpointId} FOR UPDATE
        ), f AS (
          SELECT e.id, CASE WHEN e.last_message_id IS NULL OR e.last_message_id < ${id}::uuid THEN ${id}::uuid ELSE hookrelay_uuidv7_after(e.last_message_id, 1) END AS final_id
          FROM e WHERE NOT e.gone AND NOT e.paused
        ), m AS (${message})${payload}, u AS (
          UPDATE inbound_endpoints x SET last_message_id = f.final_id FROM f WHERE x.id = f.id
        )
        SELECT f.final_id, e.last_message_id FROM e LEFT JOIN f ON true`;
    }
    return sql`
      WITH f AS (
        UPDATE inbound_endpoints e SET previous_last_message_id = e.last_message_id,
          last_message_id = CASE WHEN e.last_message_id IS NULL OR e.last_message_id < ${id}::uuid THEN ${id}::uuid ELSE hookrelay_uuidv7_after(e.last_message_id, 1) END
        WHERE e.id = ${endpointId} AND e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > now()) AND NOT e.paused
        RETURNING e.id, e.last_message_id AS final_id, e.previous_last_message_id
      ), m AS (${message})${payload}
      SELECT f.final_id, f.previous_last_message_id FROM f`;
  };

  // storeInboundOne (src/db/ingest.ts) for an endpoint read as in forward mode (`withJob`: its
  // delivery job and the NOTIFY of it), and for one in cli mode.
  const fullStore = (withJob) => {
    const id = nextId();
    const item = { ...batchItem(0, endpointId, id), path: '/', event_type: null, verified: [], trace_context: null };
    return storeInboundOne(serverDb.sql, item, body, withJob ? 'forward' : 'cli');
  };

  const variants = {
    'SELECT 1': () => sql`SELECT 1`,
    'floor INSERT': () => sql`INSERT INTO floor_messages (body) VALUES (${body}) RETURNING id`,
    'ordered floor store': () =>
      storeOrdered(sql, 1, { method: 'POST', path: '/', query: '', content_type: 'application/json', raw_headers: rawHeaders, payload_sha256: sha256 }, body),
    'message row': () =>
      sql`INSERT INTO inbound_messages (id, project_id, inbound_endpoint_id, method, path, query, content_type, size_bytes, payload_sha256, raw_headers, payload_key, received_at, updated_at)
        VALUES (${nextId()}, ${projectId}, ${endpointId}, 'POST', '', '', 'application/json', 1024, ${sha256}, ${rawHeaders}::jsonb, NULL, now(), now()) RETURNING id`,
    'message row with the body in it': () =>
      sql`INSERT INTO bench_message_rows (id, project_id, inbound_endpoint_id, method, path, query, content_type, size_bytes, payload_sha256, raw_headers, payload_key, received_at, updated_at, body)
        VALUES (${nextId()}, ${projectId}, ${endpointId}, 'POST', '', '', 'application/json', 1024, ${sha256}, ${rawHeaders}::jsonb, NULL, now(), now(), ${body}) RETURNING id`,
    'message + payload': () => {
      const id = nextId();
      return sql`WITH m AS (
          INSERT INTO inbound_messages (id, project_id, inbound_endpoint_id, method, path, query, content_type, size_bytes, payload_sha256, raw_headers, payload_key, received_at, updated_at)
          VALUES (${id}, ${projectId}, ${endpointId}, 'POST', '', '', 'application/json', 1024, ${sha256}, ${rawHeaders}::jsonb, ${'inbound/' + id}, now(), now()) RETURNING id)
        INSERT INTO payloads (key, data) SELECT 'inbound/' || m.id, ${body} FROM m RETURNING key`;
    },
    'endpoint + message + payload': () => {
      const id = nextId();
      return sql`WITH e AS (UPDATE inbound_endpoints SET last_message_id = ${id} WHERE id = ${endpointId} RETURNING id),
        m AS (
          INSERT INTO inbound_messages (id, project_id, inbound_endpoint_id, method, path, query, content_type, size_bytes, payload_sha256, raw_headers, payload_key, received_at, updated_at)
          SELECT ${id}, ${projectId}, e.id, 'POST', '', '', 'application/json', 1024, ${sha256}, ${rawHeaders}::jsonb, ${'inbound/' + id}, now(), now() FROM e RETURNING id)
        INSERT INTO payloads (key, data) SELECT 'inbound/' || m.id, ${body} FROM m RETURNING key`;
    },
    'message row with the foreign key': () =>
      sql`INSERT INTO bench_message_rows_fk (id, project_id, inbound_endpoint_id, method, path, query, content_type, size_bytes, payload_sha256, raw_headers, payload_key, received_at, updated_at)
        VALUES (${nextId()}, ${projectId}, ${endpointId}, 'POST', '', '', 'application/json', 1024, ${sha256}, ${rawHeaders}::jsonb, NULL, now(), now()) RETURNING id`,
    'endpoint row lock + last id': () => sql`
      WITH e AS (SELECT id FROM inbound_endpoints WHERE id = ${endpointId} FOR UPDATE)
      UPDATE inbound_endpoints x SET last_message_id = ${nextId()} FROM e WHERE x.id = e.id RETURNING x.id`,
    'endpoint last id (update alone)': () => sql`UPDATE inbound_endpoints SET last_message_id = ${nextId()} WHERE id = ${endpointId} RETURNING id`,
    'one statement: lock + message + payload + last id': () => oneStatementStore('inbound_messages', false),
    'storeInboundOne (forward)': () => fullStore(true),
    'storeInboundOne (cli)': () => fullStore(false),
    'one statement with the lock taken first': () => oneStatementStore('inbound_messages', false, true),
    'one statement with the foreign key': () => oneStatementStore('bench_message_rows_fk', false),
    'one statement with the body in the message row': () => oneStatementStore('bench_message_rows', true),
    'store_inbound_batch (1 webhook)': () => storeBatch('hookrelay_store_inbound_batch', [batchItem(0, endpointId, nextId())]),
    'store_inbound_batch (2 webhooks)': () =>
      storeBatch('hookrelay_store_inbound_batch', [batchItem(0, endpointId, nextId()), batchItem(1, otherEndpointId, nextId())]),
    'store_inbound_batch (4 webhooks)': () =>
      storeBatch(
        'hookrelay_store_inbound_batch',
        [endpointId, otherEndpointId, ...moreEndpointIds].map((endpoint, n) => batchItem(n, endpoint, nextId())),
      ),
    ...Object.fromEntries(list(args.functions).map((fn) => [`${fn} (1 webhook)`, () => storeBatch(fn, [batchItem(0, endpointId, nextId())])])),
    ...Object.fromEntries(
      list(args.functions).map((fn) => [`${fn} (2 webhooks)`, () => storeBatch(fn, [batchItem(0, endpointId, nextId()), batchItem(1, otherEndpointId, nextId())])]),
    ),
  };
  const only = list(args.only);
  const entries = Object.entries(variants).filter(([name]) => only.length === 0 || only.includes(name));
  if (entries.length === 0) throw new Error(`no variant named ${only.join(', ')}; there are: ${Object.keys(variants).join(', ')}`);

  // Every statement prepared on every connection of the pool before the clock starts.
  for (const [, run] of entries) await Promise.all(Array.from({ length: 20 }, () => run()));
  if (args.cpu) {
    await measureCpu(entries, postmasterPid);
    return;
  }
  const times = new Map(entries.map(([name]) => [name, []]));
  const gapMs = 1000 / rate;
  const start = performance.now();
  for (let i = 0; i < calls * entries.length; i++) {
    const [name, run] = entries[i % entries.length];
    const wait = start + i * gapMs - performance.now();
    if (wait > 0) await delay(wait);
    const t0 = performance.now();
    await run();
    times.get(name).push(performance.now() - t0);
  }

  const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
  process.stdout.write(`${rate} calls/s, ${calls} calls per variant in turn, pool of 10, durable PostgreSQL (ms)\n`);
  for (const [name, xs] of times) {
    const sorted = [...xs].sort((a, b) => a - b);
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    process.stdout.write(`${name.padEnd(36)} p50 ${pct(sorted, 50).toFixed(3)}  p90 ${pct(sorted, 90).toFixed(3)}  mean ${mean.toFixed(3)}\n`);
  }
}

/** --cpu: each variant back to back from `workers` callers, in turn; PostgreSQL's CPU per webhook. */
async function measureCpu(entries, postmasterPid) {
  const webhooksPerCall = (name) => Number(/\((\d+) webhooks\)/.exec(name)?.[1] ?? 1);
  const results = new Map(entries.map(([name]) => [name, []]));
  for (let round = 0; round < rounds; round++) {
    for (const [name, run] of entries) {
      let callsDone = 0;
      const cpuBefore = treeCpuMs(postmasterPid);
      const started = performance.now();
      const end = started + seconds * 1000;
      await Promise.all(
        Array.from({ length: workers }, async () => {
          while (performance.now() < end) {
            await run();
            callsDone += 1;
          }
        }),
      );
      const elapsedS = (performance.now() - started) / 1000;
      const webhooks = callsDone * webhooksPerCall(name);
      results.get(name).push({ callsPerS: callsDone / elapsedS, cpuUsPerWebhook: ((treeCpuMs(postmasterPid) - cpuBefore) * 1000) / webhooks });
    }
  }
  process.stdout.write(`${workers} callers back to back, ${seconds} s per variant, ${rounds} rounds, durable PostgreSQL: calls/s and PostgreSQL CPU µs per webhook, per round\n`);
  for (const [name, rs] of results) {
    const text = rs.map((r) => `${r.callsPerS.toFixed(0).padStart(5)} calls/s ${r.cpuUsPerWebhook.toFixed(0).padStart(4)} µs`).join('   ');
    process.stdout.write(`${name.padEnd(36)} ${text}\n`);
  }
}

watchdog(900);
main().then(
  async () => {
    await cleanup();
    process.exit(0);
  },
  (error) => fail(error instanceof Error ? (error.stack ?? error.message) : String(error)),
);
