// The least code that does the durable part of the listen path, for bench/listen-floor.mjs:
// POST → one INSERT of the body in its own durable commit → the body to every WebSocket client →
// 200. No ordering guarantee, no metadata, no verification, no framing. Prints `relay listening on URL`.
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { WebSocketServer } = createRequire(path.join(root, 'packages/cli/package.json'))('ws');

const sql = postgres(process.env.DATABASE_URL, { max: 4, onnotice: () => {} });
await sql`CREATE TABLE IF NOT EXISTS floor_messages (id bigserial PRIMARY KEY, body bytea NOT NULL)`;

const server = http.createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    const body = Buffer.concat(chunks);
    sql`INSERT INTO floor_messages (body) VALUES (${body}) RETURNING id`.then(
      ([row]) => {
        for (const client of sockets.clients) client.send(body);
        response.writeHead(200, { 'content-type': 'application/json' }).end(`{"id":${row.id}}`);
      },
      () => response.writeHead(503).end(),
    );
  });
});
const sockets = new WebSocketServer({ server });
process.once('SIGTERM', () => void sql.end({ timeout: 1 }).finally(() => process.exit(0)));
server.listen(0, '127.0.0.1', () => process.stdout.write(`relay listening on http://127.0.0.1:${server.address().port}\n`));
