// The least code that relays a webhook, for the floors of bench/listen.mjs and bench/listen-floor.mjs:
// Fastify takes the POST as raw bytes, then (with DATABASE_URL) one INSERT of the body in its own
// durable commit, then the body goes to every WebSocket client and the sender gets 200. Without
// DATABASE_URL nothing is stored: what a relay that keeps nothing (smee) does. No ordering guarantee,
// no metadata, no verification, no framing. Prints `relay listening on URL`.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { WebSocketServer } = createRequire(path.join(root, 'packages/cli/package.json'))('ws');
const benchRequire = createRequire(path.join(root, 'bench/package.json'));
const Fastify = benchRequire('fastify');

const durable = Boolean(process.env.DATABASE_URL);
const sql = durable ? benchRequire('postgres')(process.env.DATABASE_URL, { max: 4, onnotice: () => {} }) : undefined;
if (sql) await sql`CREATE TABLE IF NOT EXISTS floor_messages (id bigserial PRIMARY KEY, body bytea NOT NULL)`;

const app = Fastify({ logger: false, bodyLimit: 1 << 20 });
app.removeAllContentTypeParsers();
app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
let nextId = 0;
app.post('/in', async (request, reply) => {
  const body = request.body;
  const id = sql ? (await sql`INSERT INTO floor_messages (body) VALUES (${body}) RETURNING id`)[0].id : ++nextId;
  for (const client of sockets.clients) client.send(body);
  return reply.header('content-type', 'application/json').send(`{"id":${id}}`);
});
await app.ready();
const sockets = new WebSocketServer({ server: app.server, perMessageDeflate: false });
process.once('SIGTERM', () => {
  void Promise.all([app.close(), sql?.end({ timeout: 1 })]).finally(() => process.exit(0));
});
await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`relay (${durable ? 'durable' : 'no database'}) listening on http://127.0.0.1:${app.server.address().port}\n`);
