#!/usr/bin/env node
// Pull events list benchmark: one pull endpoint holding 1 million stored events (plus a
// second endpoint with as many, so the indexes hold 2M rows), the real hookrelay server process on
// a throwaway PostgreSQL, and sequential GET /v1/pull-endpoints/{id}/events requests: filtered
// pages, the default page, limit=1000 pages and keyset paging deep into the list.
//
//   node bench/pull-list.mjs [--events 1000000] [--requests 300] [--no-build] [--enforce] [--explain]
//
// Prints p50/p95/p99/max per scenario, through the API (client-measured HTTP round trip on loopback)
// and for the server's list query alone (the same query builder, called directly).
// --explain prints the PostgreSQL plan of the filtered page. --enforce: exit 1 when the API p99 of
// the filtered 100-event page is above 20 ms. Exit 1 on any non-200 answer or wrong page.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import postgres from 'postgres';
import { startPgCluster } from '@hookrelay/server/testing';

const TARGET_P99_MS = 20;
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '1000000' },
    requests: { type: 'string', default: '300' },
    'no-build': { type: 'boolean', default: false },
    enforce: { type: 'boolean', default: false },
    explain: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  process.stdout.write(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1, 13).map((l) => l.replace(/^\/\/ ?/, '')).join('\n') + '\n');
  process.exit(0);
}
const EVENTS = Number(args.events);
const REQUESTS = Number(args.requests);

const cleanups = [];
async function cleanup() {
  for (const fn of cleanups.reverse()) {
    try {
      await fn();
    } catch (error) {
      process.stderr.write(`cleanup: ${error instanceof Error ? error.message : error}\n`);
    }
  }
  cleanups.length = 0;
}
async function fail(message) {
  process.stderr.write(`bench: ${message}\n`);
  await cleanup();
  process.exit(1);
}
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => void fail(`interrupted by ${signal}`));
const watchdog = setTimeout(() => void fail('run exceeded 20 minutes'), 20 * 60_000);
watchdog.unref();

const log = (line) => process.stderr.write(`${line}\n`);

if (!args['no-build']) {
  log('building packages/shared and packages/server …');
  execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-b', 'packages/shared', 'packages/server'], { cwd: root, stdio: 'inherit' });
}

// ---------- database and server ----------

const pg = await startPgCluster(process.env);
cleanups.push(() => pg.stop());
const tmp = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-bench-pull-'));
cleanups.push(() => rmSync(tmp, { recursive: true, force: true }));
const apiKey = `hr_${randomBytes(20).toString('hex')}`;

const child = spawn(process.execPath, [path.join(root, 'packages/server/dist/bin/hookrelay-server.js'), 'start'], {
  cwd: root,
  env: {
    ...process.env,
    HOOKRELAY_HOST: '127.0.0.1',
    HOOKRELAY_PORT: '0',
    DATABASE_URL: pg.url,
    HOOKRELAY_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    HOOKRELAY_BOOTSTRAP_API_KEY: apiKey,
    HOOKRELAY_DATA_DIR: path.join(tmp, 'data'),
    HOOKRELAY_LOG_LEVEL: 'warn',
    // Only the API: no workers or sweepers touching the data while it is measured.
    HOOKRELAY_ROLES: 'api,ingest',
    // Back-to-back list requests of one key: the per-key API limit would throttle them.
    HOOKRELAY_API_RATE_LIMIT: '0',
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
const exited = new Promise((resolve) => child.once('exit', resolve));
cleanups.push(async () => {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM');
    await exited;
  }
});
const baseUrl = await new Promise((resolve, reject) => {
  let output = '';
  const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 30_000);
  child.stdout.on('data', (chunk) => {
    output += chunk;
    const match = /listening on (http:\/\/[^\s]+)/.exec(output);
    if (match) {
      clearTimeout(timer);
      resolve(match[1]);
    }
  });
  child.stderr.on('data', (chunk) => (output += chunk));
  exited.then((code) => reject(new Error(`server exited (${code}):\n${output}`)));
}).catch((error) => fail(error.message));

async function api(method, urlPath, body) {
  const res = await fetch(`${baseUrl}${urlPath}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status >= 300) await fail(`${method} ${urlPath} answered ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

const endpoint = (await api('POST', '/v1/pull-endpoints', { name: 'bench' })).data;
const neighbour = (await api('POST', '/v1/pull-endpoints', { name: 'bench neighbour' })).data;

// ---------- seed ----------

const sql = postgres(pg.url, { max: 2, onnotice: () => {} });
cleanups.push(() => sql.end({ timeout: 5 }));
const [{ project_id: projectId }] = await sql`SELECT project_id FROM pull_endpoints WHERE id = ${endpoint.id}`;

// 30 days of traffic ending now; ids carry the received_at millisecond, as ingestion makes them.
// Status mix: 70 % delivered, 10 % fetched, 20 % stored; 20 event types, independent of the status.
const SPAN_MS = 30 * 24 * 60 * 60 * 1000;
const end = Date.now();
const start = end - SPAN_MS;
const step = SPAN_MS / EVENTS;
async function seed(endpointId, salt) {
  const CHUNK = 100_000;
  for (let from = 0; from < EVENTS; from += CHUNK) {
    const to = Math.min(EVENTS, from + CHUNK) - 1;
    await sql`
      INSERT INTO pull_events (id, project_id, endpoint_id, status, event_type, method, query, content_type, size_bytes,
        payload_sha256, raw_headers, payload_key, ingest_processing_ms, received_at, fetched_at, delivered_at)
      SELECT
        (lpad(to_hex(ms), 12, '0') || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid,
        ${projectId}::uuid, ${endpointId}::uuid,
        CASE WHEN i % 10 < 7 THEN 'delivered' WHEN i % 10 < 8 THEN 'fetched' ELSE 'stored' END,
        'type.' || (('x' || substr(h, 20, 4))::bit(16)::int % 20),
        'POST', '', 'application/json', 1024, h || h, '[["content-type","application/json"]]'::jsonb, NULL, 1,
        'epoch'::timestamptz + ms * interval '1 millisecond',
        CASE WHEN i % 10 < 8 THEN 'epoch'::timestamptz + ms * interval '1 millisecond' + interval '2 seconds' END,
        CASE WHEN i % 10 < 7 THEN 'epoch'::timestamptz + ms * interval '1 millisecond' + interval '3 seconds' END
      FROM (
        SELECT i, (${start}::bigint + floor(i * ${step}::float8))::bigint AS ms, md5(${salt} || i::text) AS h
        FROM generate_series(${from}::int, ${to}::int) AS i
      ) s`;
    log(`seeded ${to + 1} / ${EVENTS} events of ${endpointId === endpoint.id ? 'the measured endpoint' : 'its neighbour'}`);
  }
}
const seedStarted = performance.now();
await seed(endpoint.id, 'a');
await seed(neighbour.id, 'b');
await sql`VACUUM ANALYZE pull_events`;
// Flush the load's dirty pages now, not while the first scenario is measured.
await sql`CHECKPOINT`;
log(`seeded and analysed in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`);
const [{ n }] = await sql`SELECT count(*)::int AS n FROM pull_events WHERE endpoint_id = ${endpoint.id}`;
if (n !== EVENTS) await fail(`expected ${EVENTS} events, found ${n}`);

// ---------- scenarios ----------

const iso = (ms) => new Date(ms).toISOString();
const base = `/v1/pull-endpoints/${endpoint.id}/events`;
const day = 24 * 60 * 60 * 1000;
const rnd = (max) => Math.floor(Math.random() * max);
const windowStart = () => start + rnd(SPAN_MS - day);

/**
 * Each scenario makes the parameters of one request (random positions, so no two hit the same
 * rows). Each is measured twice: through the HTTP API (what a consumer sees: auth, endpoint lookup,
 * the list query, serialisation, loopback HTTP) and as the server's list query alone, run through
 * the server's own query builder on the same database (what the index design decides).
 */
const scenarios = [
  {
    name: 'filtered page: status=stored,fetched, event_type, 1-day window, limit 100',
    key: 'filtered',
    params: () => {
      const from = windowStart();
      return { status: 'stored,fetched', event_type: `type.${rnd(20)}`, received_after: iso(from), received_before: iso(from + day), limit: 100 };
    },
  },
  {
    name: 'filtered page: status=delivered, received_after (open-ended), limit 100',
    key: 'after',
    params: () => ({ status: 'delivered', received_after: iso(windowStart()), limit: 100 }),
  },
  { name: 'default page (status=stored, limit 100)', key: 'default', params: () => ({}) },
  { name: 'all statuses, limit 100', key: 'all', params: () => ({ status: 'stored,fetched,delivered', limit: 100 }) },
  {
    name: 'filtered page: event_type of all statuses, 1-day window, limit 1000',
    key: 'filtered1000',
    params: () => {
      const from = windowStart();
      return { status: 'stored,fetched,delivered', event_type: `type.${rnd(20)}`, received_after: iso(from), received_before: iso(from + day), limit: 1000 };
    },
  },
  { name: 'unknown type (no match), all statuses, limit 100', key: 'none', params: () => ({ status: 'stored,fetched,delivered', event_type: 'type.none', limit: 100 }) },
];

const toQuery = (params) => new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString();
const toFilters = (params) => ({
  statuses: (params.status ?? 'stored').split(','),
  ...(params.event_type ? { eventType: params.event_type } : {}),
  ...(params.received_after ? { receivedAfter: params.received_after } : {}),
  ...(params.received_before ? { receivedBefore: params.received_before } : {}),
});

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
function summary(times) {
  const sorted = [...times].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] };
}

async function timed(urlPath) {
  const t0 = performance.now();
  const res = await fetch(`${baseUrl}${urlPath}`, { headers: { authorization: `Bearer ${apiKey}` } });
  const text = await res.text();
  const ms = performance.now() - t0;
  if (res.status !== 200) await fail(`GET ${urlPath} answered ${res.status}: ${text.slice(0, 300)}`);
  return { ms, body: JSON.parse(text) };
}

// The server's query builder, on a connection pool of its own (the dist build of this tree).
const { openPostgres } = await import(pathToFileURL(path.join(root, 'packages/server/dist/db/database.js')).href);
const { listPullEvents } = await import(pathToFileURL(path.join(root, 'packages/server/dist/db/pull-events.js')).href);
const direct = openPostgres({ url: pg.url, poolSize: 1 });
cleanups.push(() => direct.close());

const results = [];
for (const scenario of scenarios) {
  for (let i = 0; i < 100; i++) await timed(`${base}?${toQuery(scenario.params())}`); // warm-up
  const times = [];
  let rows = 0;
  for (let i = 0; i < REQUESTS; i++) {
    const { ms, body } = await timed(`${base}?${toQuery(scenario.params())}`);
    times.push(ms);
    rows += body.data.length;
    // Spot-check the page: oldest first.
    for (let j = 1; j < body.data.length; j++) if (body.data[j - 1].id >= body.data[j].id) await fail(`${scenario.key}: page out of order`);
  }
  const queryTimes = [];
  for (let i = 0; i < REQUESTS; i++) {
    const params = scenario.params();
    const t0 = performance.now();
    await listPullEvents(direct.sql, endpoint.id, toFilters(params), (params.limit ?? 100) + 1, { projectId });
    queryTimes.push(performance.now() - t0);
  }
  results.push({ ...scenario, ...summary(times), query: summary(queryTimes), rows: rows / REQUESTS });
}

// Keyset paging through one status of the whole endpoint (100,000 fetched events), 1000 a page.
{
  const times = [];
  const seen = new Set();
  let cursor = '';
  let last = '';
  for (;;) {
    const { ms, body } = await timed(`${base}?status=fetched&limit=1000${cursor ? `&cursor=${cursor}` : ''}`);
    times.push(ms);
    for (const e of body.data) {
      if (seen.has(e.id) || e.id <= last) await fail('paging returned an event twice or out of order');
      seen.add(e.id);
      last = e.id;
    }
    if (!body.meta.has_more) break;
    cursor = body.meta.next_cursor;
  }
  const expected = Math.floor(EVENTS / 10);
  if (Math.abs(seen.size - expected) > 1) await fail(`paging saw ${seen.size} fetched events, expected ${expected}`);
  const queryTimes = [];
  let afterId;
  for (;;) {
    const t0 = performance.now();
    const rows = await listPullEvents(direct.sql, endpoint.id, { statuses: ['fetched'], ...(afterId ? { afterId } : {}) }, 1001, { projectId });
    queryTimes.push(performance.now() - t0);
    if (rows.length <= 1000) break;
    afterId = rows[999].id;
  }
  results.push({
    name: `keyset paging, status=fetched, limit 1000 (${times.length} pages, ${seen.size} events)`,
    key: 'paging',
    ...summary(times),
    query: summary(queryTimes),
    rows: seen.size / times.length,
  });
}

if (args.explain) {
  // The exact statement the server sends for one filtered page, captured from its query builder.
  const { compile, fragment, joinFragments } = await import(pathToFileURL(path.join(root, 'packages/server/dist/db/database.js')).href);
  let captured;
  const capture = Object.assign(
    (strings, ...values) => {
      captured = compile(strings, values);
      return Promise.resolve([]);
    },
    { fragment, join: joinFragments },
  );
  const params = scenarios[0].params();
  await listPullEvents(capture, endpoint.id, toFilters(params), params.limit + 1, { projectId });
  const plan = await sql.unsafe(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${captured.text}`, captured.params);
  log(`\nplan of a filtered page (${toQuery(params)}):`);
  for (const row of plan) log(`  ${row['QUERY PLAN']}`);
}

const pgVersion = (await sql`SHOW server_version`)[0].server_version;
await cleanup();

const lines = [
  `pull events list, ${EVENTS.toLocaleString('en')} events on the endpoint (+ ${EVENTS.toLocaleString('en')} on a neighbour), PostgreSQL ${pgVersion}, Node ${process.version}, ${REQUESTS} requests per scenario`,
  '',
  'HTTP = GET through the API (client-measured round trip); query = the server list query alone.',
  '',
  '| scenario | rows/page | HTTP p50 | HTTP p95 | HTTP p99 | HTTP max | query p50 | query p99 | query max |',
  '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ...results.map(
    (r) =>
      `| ${r.name} | ${Math.round(r.rows)} | ${r.p50.toFixed(1)} | ${r.p95.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.max.toFixed(1)} | ${r.query.p50.toFixed(2)} | ${r.query.p99.toFixed(2)} | ${r.query.max.toFixed(2)} |`,
  ),
];
process.stdout.write(`${lines.join('\n')}\n`);
const filtered = results.find((r) => r.key === 'filtered');
const ok = filtered.p99 <= TARGET_P99_MS;
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
process.stdout.write(
  `\ntarget: p99 of the filtered page ≤ ${TARGET_P99_MS} ms through the API — ${ok ? 'met' : 'NOT met'} (${filtered.p99.toFixed(1)} ms; ` +
    `the query alone ${filtered.query.p99.toFixed(2)} ms). Load average at the end: ${load} on ${os.cpus().length} CPUs.\n`,
);
process.exit(args.enforce && !ok ? 1 : 0);
