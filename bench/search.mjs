#!/usr/bin/env node
// Message search benchmark: one inbound endpoint holding --messages messages received over the last
// 23 hours, each with a body of about 1 KiB in the payloads table and eight header lines (plus a
// second endpoint with as many, so the index holds twice that), on a throwaway PostgreSQL, and the
// search GET /v1/inbound-endpoints/{id}/messages?q=… runs (searchMessages: the window, the bounded
// scan, the page) called directly: a text no message holds (the whole window read, every header
// and body), one in a header of 1 message in 1,000, one in the body of 1 in 10, an absent text with
// an event type filter, and an absent text in a one-hour window.
//
//   node bench/search.mjs [--messages 100000] [--repeat 5]   (after `pnpm build`)
//
// Prints the mean time of each search over --repeat runs (after one warm-up run), and whether the
// slowest one answers within the target (1 s at 100,000 messages). Exit 1 on a failure or a page of
// the wrong length.
import { parseArgs } from 'node:util';
import { insertBenchEndpoints, loadBuilt, meanOf, onMigratedPostgres } from './lib.mjs';

const { values: args } = parseArgs({ options: { messages: { type: 'string', default: '100000' }, repeat: { type: 'string', default: '5' } } });
const MESSAGES = Number(args.messages);
const REPEAT = Number(args.repeat);
const TARGET_MS = 1000;

const { searchMessages } = await loadBuilt('packages/server/dist/http/message-search.js');

await onMigratedPostgres(async (sql) => {
  let failed = false;
  const { project: PROJECT, endpoints: ENDPOINTS } = await insertBenchEndpoints(sql);
  const [E] = ENDPOINTS;
  const now = Date.now();
  const start = now - 23 * 3_600_000;
  const step = Math.max(1, Math.floor((23 * 3_600_000) / MESSAGES));
  for (const [i, endpoint] of ENDPOINTS.entries()) {
    // Ids carry the received_at millisecond, as ingestion makes them. Bodies differ from message to
    // message (an md5 of its number, repeated), as real ones do; 1 in 10 holds "body-needle", 1 in
    // 1,000 has a header "header-needle".
    await sql.execScript(`
      CREATE TEMP TABLE bench_rows AS
      SELECT (lpad(to_hex(${start}::bigint + g::bigint * ${step}), 12, '0') || '7000' || '8${i}' || lpad(to_hex(g), 14, '0'))::uuid AS id,
             g, md5(g::text) AS h
      FROM generate_series(1, ${MESSAGES}) AS g;
      INSERT INTO payloads (key, data)
      SELECT 'inbound/' || r.id, convert_to(json_build_object(
               'id', 'evt_' || r.g, 'type', 'charge.updated',
               'data', json_build_object('customer', 'cus_' || r.h, 'note', CASE WHEN r.g % 10 = 0 THEN 'body-needle' ELSE 'plain' END,
                                         'history', repeat(r.h, 28)))::text, 'UTF8')
      FROM bench_rows r;
      INSERT INTO inbound_messages (id, project_id, inbound_endpoint_id, method, path, content_type, size_bytes, payload_sha256,
        raw_headers, payload_key, received_at, updated_at, event_type, response_status)
      SELECT r.id, '${PROJECT}', '${endpoint}', 'POST', '/', 'application/json', 1100, r.h,
        jsonb_build_array(jsonb_build_array('Host', 'hooks.example.com'), jsonb_build_array('User-Agent', 'Stripe/1.0 (+https://stripe.com/docs/webhooks)'),
          jsonb_build_array('Content-Type', 'application/json; charset=utf-8'), jsonb_build_array('Content-Length', '1100'),
          jsonb_build_array('Stripe-Signature', 't=1700000000,v1=' || r.h || r.h), jsonb_build_array('X-Request-Id', r.h),
          jsonb_build_array('Accept', '*/*'), jsonb_build_array('X-Trace', CASE WHEN r.g % 1000 = 0 THEN 'header-needle' ELSE r.h END)),
        'inbound/' || r.id, to_timestamp((${start}::bigint + r.g::bigint * ${step}) / 1000.0), now(),
        (ARRAY['push', 'pull_request', 'issues', 'ping', 'release'])[1 + r.g % 5], CASE WHEN r.g % 3 = 0 THEN NULL ELSE 200 END
      FROM bench_rows r;
      DROP TABLE bench_rows;
      ANALYZE inbound_messages;
      ANALYZE payloads;`);
  }
  const store = { kind: 'database' };
  const hourAgo = new Date(now - 3_600_000).toISOString();
  const expectedFull = (every) => Math.min(50, Math.floor(MESSAGES / every));
  const scenarios = [
    ['absent text (reads the whole window)', { q: 'no-such-text' }, {}, 0],
    ['text in a header of 1 in 1,000', { q: 'header-needle' }, {}, expectedFull(1000)],
    ['text in the body of 1 in 10', { q: 'body-needle' }, {}, expectedFull(10)],
    ['absent text, event_type=push (1 in 5)', { q: 'no-such-text', event_type: 'push' }, { eventType: 'push' }, 0],
    ['absent text, the last hour', { q: 'no-such-text', received_after: hourAgo }, { receivedAfter: hourAgo }, 0],
  ];
  process.stdout.write(`${MESSAGES.toLocaleString('en')} messages on the endpoint (and as many on another), mean of ${REPEAT} runs\n`);
  let slowest = 0;
  for (const [label, query, filters, expected] of scenarios) {
    const { ms, result } = await meanOf(() => searchMessages({ sql, backend: 'postgres' }, store, E, { limit: 50, ...query }, filters, Date.now()), REPEAT);
    slowest = Math.max(slowest, ms);
    if (result.rows.length !== expected) {
      failed = true;
      process.stderr.write(`bench: ${label}: ${result.rows.length} rows, expected ${expected}\n`);
    }
    process.stdout.write(`${label.padEnd(44)} ${ms.toFixed(1).padStart(8)} ms  (scan limit reached: ${result.meta.search.scan_limit_reached})\n`);
  }
  process.stdout.write(`target ≤ ${TARGET_MS} ms for the slowest search: ${slowest <= TARGET_MS ? 'met' : 'NOT met'} (${slowest.toFixed(1)} ms)\n`);
  return !failed;
});
