#!/usr/bin/env node
// Endpoint message list benchmark: one inbound endpoint holding --messages messages over 30 days
// (plus a second endpoint with as many, so the index holds twice that), on a throwaway PostgreSQL,
// and the list's query (listEndpointMessages, the one GET /v1/inbound-endpoints/{id}/messages runs)
// called directly: the first page, event type filters (common, glob, rare, absent), the answer
// filter, a page deep into the list, received windows, and the endpoint counts of the list.
//
//   node bench/inbound-list.mjs [--messages 100000] [--repeat 20]   (after `pnpm build`)
//
// Prints the mean time of each query over --repeat runs (after one warm-up run). Exit 1 on a
// failure or a page of the wrong length.
import { parseArgs } from 'node:util';
import { insertBenchEndpoints, loadBuilt, meanOf, onMigratedPostgres } from './lib.mjs';

const { values: args } = parseArgs({ options: { messages: { type: 'string', default: '100000' }, repeat: { type: 'string', default: '20' } } });
const MESSAGES = Number(args.messages);
const REPEAT = Number(args.repeat);

const { listEndpointMessages } = await loadBuilt('packages/server/dist/db/inbound-messages.js');
const { countInboundEndpointActivity } = await loadBuilt('packages/server/dist/db/inbound-endpoints.js');
const { uuidv7AtTime } = await loadBuilt('packages/shared/dist/index.js');

await onMigratedPostgres(async (sql) => {
  let failed = false;
  const { project: PROJECT, endpoints: ENDPOINTS } = await insertBenchEndpoints(sql);
  const [E] = ENDPOINTS;
  const start = Date.now() - 30 * 86_400_000;
  const step = Math.floor((30 * 86_400_000) / MESSAGES);
  for (const [i, endpoint] of ENDPOINTS.entries()) {
    // Ids carry the received_at millisecond, as ingestion makes them; one message in 1,000 is 'rare'.
    await sql.execScript(`
      INSERT INTO inbound_messages (id, project_id, inbound_endpoint_id, method, path, content_type, size_bytes, payload_sha256,
        raw_headers, received_at, updated_at, event_type, response_status)
      SELECT (lpad(to_hex(${start}::bigint + g::bigint * ${step}), 12, '0') || '7000' || '8${i}' || lpad(to_hex(g), 14, '0'))::uuid,
        '${PROJECT}', '${endpoint}', 'POST', '/', 'application/json', 10, 'x', '[]',
        to_timestamp((${start}::bigint + g::bigint * ${step}) / 1000.0), now(),
        CASE WHEN g % 1000 = 0 THEN 'rare' ELSE (ARRAY['push', 'pull_request.opened', 'pull_request.closed', 'issues', 'ping'])[1 + g % 5] END,
        CASE WHEN g % 3 = 0 THEN NULL WHEN g % 3 = 1 THEN 200 ELSE 500 END
      FROM generate_series(1, ${MESSAGES}) AS g;
      ANALYZE inbound_messages;`);
  }
  const day = (n) => new Date(start + n * 86_400_000).toISOString();
  const scenarios = [
    ['first page of 50', {}, {}, 51],
    ['event_type=push', { eventType: 'push' }, {}, 51],
    ['event_type=pull_request.*', { eventType: 'pull_request.*' }, {}, 51],
    ['event_type=rare (1 in 1,000)', { eventType: 'rare' }, {}, 51],
    ['event_type=absent (reads every message)', { eventType: 'absent' }, {}, 0],
    ['answer=5xx', { answer: '5xx' }, {}, 51],
    ['a page halfway (cursor)', {}, { beforeId: uuidv7AtTime(start + 15 * 86_400_000) }, 51],
    ['received_after 2 days ago, absent type', { eventType: 'absent', receivedAfter: day(28) }, {}, 0],
    ['received in a day a month ago', { receivedAfter: day(1), receivedBefore: day(2) }, {}, 51],
  ];
  process.stdout.write(`${MESSAGES.toLocaleString('en')} messages on the endpoint (and as many on another), mean of ${REPEAT} runs\n`);
  const time = async (label, run, expected) => {
    const { ms, result } = await meanOf(run, REPEAT);
    const length = Array.isArray(result) ? result.length : result.size;
    if (expected !== undefined && length !== expected) {
      failed = true;
      process.stderr.write(`bench: ${label}: ${length} rows, expected ${expected}\n`);
    }
    process.stdout.write(`${label.padEnd(52)} ${ms.toFixed(2).padStart(8)} ms\n`);
  };
  for (const [label, filters, page, expected] of scenarios) {
    await time(label, () => listEndpointMessages(sql, E, filters, { limit: 51, ...page }), expected);
  }
  await time('connected_listeners and messages_24h, 2 endpoints', () => countInboundEndpointActivity(sql, ENDPOINTS, uuidv7AtTime(Date.now() - 86_400_000), 90), 2);
  return !failed;
});
