// The least code that does the CLI's part, for the floors of bench/listen.mjs and
// bench/listen-floor.mjs. Prints `client listening on …` once connected.
//   - default: each WebSocket message (the raw body) is POSTed to the local app as it comes;
//   - FLOOR_CLIENT=framed (the ordered relay): each frame is parsed, its body decoded from base64
//     and checked against its SHA-256, and the message is POSTed with its own header lines (less
//     those of the connection) to the app, one at a time in the stream's order, as `hookrelay
//     listen` does; then the app's answer goes back as a result frame and the id to a cursor file.
//     Its frames are those of hookrelay's stream, so it also runs on it (bench/listen.mjs --hybrid).
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const cliRequire = createRequire(path.join(root, 'packages/cli/package.json'));
const WebSocket = cliRequire('ws');
const { Client } = cliRequire('undici');

const app = new Client(process.env.APP_URL);
// STREAM_AUTH: the framed client on hookrelay's own stream (bench/listen.mjs --hybrid) sends its API key.
const socket = new WebSocket(process.env.RELAY_URL.replace(/^http/, 'ws'), {
  perMessageDeflate: false,
  headers: process.env.STREAM_AUTH ? { authorization: process.env.STREAM_AUTH } : {},
});
socket.on('open', () => process.stdout.write(`client listening on http://connected\n`));
socket.on('close', () => process.exit(0));
process.once('SIGTERM', () => process.exit(0));

if (process.env.FLOOR_CLIENT !== 'framed') {
  socket.on('message', async (data) => {
    const answer = await app.request({ path: '/', method: 'POST', headers: { 'content-type': 'application/json' }, body: data });
    await answer.body.dump();
  });
} else {
  const DROPPED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host', 'content-length', 'expect']);
  const cursorFile = path.join(os.tmpdir(), `hookrelay-floor-cursor-${process.pid}`);
  process.once('exit', () => rmSync(cursorFile, { force: true }));
  const queue = [];
  let forwarding = false;
  let saving = Promise.resolve();

  const forward = async () => {
    forwarding = true;
    while (queue.length > 0) {
      const message = queue.shift();
      const body = Buffer.from(message.body, 'base64');
      if (createHash('sha256').update(body).digest('hex') !== message.payload_sha256) throw new Error(`message ${message.message_id}: payload_sha256 mismatch`);
      const headers = [];
      for (const [name, value] of message.raw_headers) if (!DROPPED.has(name.toLowerCase())) headers.push(name, value);
      headers.push('content-length', String(body.length));
      const started = performance.now();
      const answer = await app.request({ path: message.query ? `${message.path}?${message.query}` : message.path, method: message.method, headers, body });
      await answer.body.dump();
      socket.send(JSON.stringify({ type: 'result', message_id: message.message_id, status: answer.statusCode, latency_ms: Math.round(performance.now() - started), error: null }));
      const id = message.message_id;
      saving = saving.then(() => writeFile(cursorFile, id));
    }
    forwarding = false;
  };
  socket.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    if (frame.type !== 'message') return;
    queue.push(frame.message);
    if (!forwarding) void forward().catch((error) => {
      process.stderr.write(`client: ${error.message}\n`);
      process.exit(1);
    });
  });
}
