// The baselines for bench/ingest.mjs, Fastify 5 with no logger, answering any POST under /in/:
// - without DATABASE_URL, a bare handler that answers 200 at once (default JSON parser): what the
//   framework costs, storing nothing;
// - with DATABASE_URL, a handler that does one INSERT of the raw body per request in its own
//   synchronous commit (pool of 10), then answers 200: the least a durable ingest does.
// Prints `bare listening on http://HOST:PORT` (or `insert listening on …`).
import Fastify from 'fastify';
import postgres from 'postgres';

const sql = process.env.DATABASE_URL ? postgres(process.env.DATABASE_URL, { max: 10, onnotice: () => {} }) : undefined;
const app = Fastify({ logger: false });
if (sql) {
  await sql`CREATE TABLE IF NOT EXISTS insert_baseline (id bigserial PRIMARY KEY, body bytea NOT NULL)`;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  app.post('/in/*', async (request) => {
    const [row] = await sql`INSERT INTO insert_baseline (body) VALUES (${request.body}) RETURNING id`;
    return { data: { id: row.id } };
  });
} else {
  app.post('/in/*', async () => ({ data: { ok: true } }));
}
const stop = () => void Promise.all([app.close(), sql?.end({ timeout: 1 })]).then(() => process.exit(0), () => process.exit(1));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
await app.listen({ host: '127.0.0.1', port: 0 });
const { port } = /** @type {import('node:net').AddressInfo} */ (app.server.address());
process.stdout.write(`${sql ? 'insert' : 'bare'} listening on http://127.0.0.1:${port}\n`);
