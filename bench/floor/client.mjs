// The least code that does the CLI's part, for bench/listen-floor.mjs: each WebSocket message (the
// raw body) is POSTed to the local app. Prints `client listening on ws://…` once connected.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const cliRequire = createRequire(path.join(root, 'packages/cli/package.json'));
const WebSocket = cliRequire('ws');
const { Client } = cliRequire('undici');

const app = new Client(process.env.APP_URL);
const socket = new WebSocket(process.env.RELAY_URL.replace(/^http/, 'ws'));
socket.on('open', () => process.stdout.write(`client listening on http://connected\n`));
socket.on('message', async (data) => {
  const answer = await app.request({ path: '/', method: 'POST', headers: { 'content-type': 'application/json' }, body: data });
  await answer.body.dump();
});
socket.on('close', () => process.exit(0));
