// The baseline for bench/ingest.mjs: a bare Fastify 5 server (default JSON parser, no logger)
// whose handler answers 200 to any POST under /in/. Prints `bare listening on http://HOST:PORT`.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.post('/in/*', async () => ({ data: { ok: true } }));
const stop = () => void app.close().then(() => process.exit(0), () => process.exit(1));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
await app.listen({ host: '127.0.0.1', port: 0 });
const { port } = /** @type {import('node:net').AddressInfo} */ (app.server.address());
process.stdout.write(`bare listening on http://127.0.0.1:${port}\n`);
