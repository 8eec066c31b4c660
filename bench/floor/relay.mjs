// The least code that relays a webhook, for the floors of bench/listen.mjs and bench/listen-floor.mjs.
// Fastify takes the POST as raw bytes; what happens next depends on FLOOR_MODE:
//   - nodb: nothing is stored, the body goes to every WebSocket client: what a relay that keeps
//     nothing (smee) does;
//   - durable (DATABASE_URL): one INSERT of the body in its own synchronous commit, then the body to
//     every client. No ordering guarantee, no metadata, no verification, no framing;
//   - ordered (DATABASE_URL): what hookrelay's guarantees need at the least (docs/architecture.md,
//     Ordering): the store of ./ordered-store.mjs (the endpoint's order and a message row with
//     what a CLI message carries, one statement in its own synchronous commit; what arrives while a
//     commit is under way waits for the next one, a group commit), then the stream's frames
//     (JSON, body in base64) in sequence order to every client; a client's result frame is
//     recorded in a commit of its own.
// The sender gets 200 with the id once the commit is durable (at once without a database). Prints
// `relay (<mode>) listening on URL`.
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createOrderedTables, recordOrderedResult, storeOrderedBatch } from './ordered-store.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { WebSocketServer } = createRequire(path.join(root, 'packages/cli/package.json'))('ws');
const benchRequire = createRequire(path.join(root, 'bench/package.json'));
const Fastify = benchRequire('fastify');

const mode = process.env.FLOOR_MODE || (process.env.DATABASE_URL ? 'durable' : 'nodb');
if (!['nodb', 'durable', 'ordered'].includes(mode) || (mode !== 'nodb' && !process.env.DATABASE_URL)) {
  process.stderr.write(`relay: FLOOR_MODE ${mode} (nodb, durable or ordered; the last two need DATABASE_URL)\n`);
  process.exit(2);
}
const sql = mode === 'nodb' ? undefined : benchRequire('postgres')(process.env.DATABASE_URL, { max: 4, onnotice: () => {} });
const ENDPOINT = 1;
if (mode === 'durable') await sql`CREATE TABLE IF NOT EXISTS floor_messages (id bigserial PRIMARY KEY, body bytea NOT NULL)`;
if (mode === 'ordered') await createOrderedTables(sql, ENDPOINT);

/** A sequence number as an id that sorts as text (the benchmark checks order on ids). */
const idOf = (seq) => String(seq).padStart(16, '0');

/**
 * Webhooks waiting for the ordered store. One batch is stored at a time, as one group commit of all
 * that arrived meanwhile, and its frames go out in sequence order before the next batch starts: so
 * every client gets the endpoint's messages in order.
 */
const waiting = [];
let storing = false;

/** Stores the webhook as the ordered floor does, then sends its frame; resolves to its id. */
function storeAndSend(request, body) {
  const raw = request.raw.rawHeaders;
  const headers = [];
  for (let i = 0; i + 1 < raw.length; i += 2) headers.push([raw[i], raw[i + 1]]);
  const at = request.url.indexOf('?');
  const message = {
    method: request.method,
    path: '/',
    query: at < 0 ? '' : request.url.slice(at + 1),
    content_type: request.headers['content-type'] ?? '',
    raw_headers: headers,
    payload_sha256: createHash('sha256').update(body).digest('hex'),
    size_bytes: body.length,
    body,
  };
  return new Promise((resolve, reject) => {
    waiting.push({ message, resolve, reject });
    if (!storing) void storeWaiting();
  });
}

async function storeWaiting() {
  storing = true;
  while (waiting.length > 0) {
    const batch = waiting.splice(0);
    try {
      const seqs = await storeOrderedBatch(sql, ENDPOINT, batch.map((w) => w.message));
      batch.forEach(({ message: { body, ...message }, resolve }, i) => {
        const id = idOf(seqs[i]);
        const frame = JSON.stringify({ type: 'message', message: { message_id: id, ...message, body: body.toString('base64'), body_encoding: 'base64' } });
        for (const client of sockets.clients) client.send(frame);
        resolve(id);
      });
    } catch (error) {
      batch.forEach((w) => w.reject(error));
    }
  }
  storing = false;
}

async function recordResult(data) {
  let result;
  try {
    result = JSON.parse(data.toString());
  } catch {
    return;
  }
  if (result?.type !== 'result' || typeof result.message_id !== 'string') return;
  await recordOrderedResult(sql, ENDPOINT, Number(result.message_id), result.status, result.latency_ms);
}

const app = Fastify({ logger: false, bodyLimit: 1 << 20 });
app.removeAllContentTypeParsers();
app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
let nextId = 0;
app.post('/in', async (request, reply) => {
  const body = request.body;
  if (mode === 'ordered') {
    const id = await storeAndSend(request, body);
    return reply.header('content-type', 'application/json').send(`{"data":{"message_id":"${id}"}}`);
  }
  const id = sql ? (await sql`INSERT INTO floor_messages (body) VALUES (${body}) RETURNING id`)[0].id : ++nextId;
  for (const client of sockets.clients) client.send(body);
  return reply.header('content-type', 'application/json').send(`{"id":${id}}`);
});
await app.ready();
const sockets = new WebSocketServer({ server: app.server, perMessageDeflate: false });
if (mode === 'ordered') {
  sockets.on('connection', (socket) => socket.on('message', (data) => void recordResult(data).catch((error) => process.stderr.write(`relay: result not recorded: ${error.message}\n`))));
}
process.once('SIGTERM', () => {
  void Promise.all([app.close(), sql?.end({ timeout: 1 })]).finally(() => process.exit(0));
});
await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`relay (${mode}) listening on http://127.0.0.1:${app.server.address().port}\n`);
