// A stand-in for `cloudflared` and `ngrok` on PATH, for `hookrelay dev --tunnel` tests: it prints
// what the real program prints when a quick tunnel (cloudflared) or an HTTP tunnel (ngrok v3, JSON
// log) is up, and proxies HTTP to the local port it was given, as the tunnel's edge would. The
// "public" address cannot be resolved here, so the stand-in writes its proxy's local address and
// its pid to $TUNNEL_STANDIN_STATE; a test sends to that address with the public Host header.
//
// Usage (as the CLI runs them):
//   tunnel-standin.mjs cloudflared tunnel --url http://127.0.0.1:PORT
//   tunnel-standin.mjs ngrok http http://127.0.0.1:PORT --log stdout --log-format json
// $TUNNEL_STANDIN_MODE=silent prints nothing and proxies nothing (a tunnel that never comes up).
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';

const [program, ...args] = process.argv.slice(2);
const target = new URL(program === 'cloudflared' ? args[args.indexOf('--url') + 1] : args[1]);
const mode = process.env.TUNNEL_STANDIN_MODE ?? 'up';
const stamp = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const words = () => ['seasonal', 'deck', 'organisms', 'sf', 'maple', 'river', 'quiet', 'lamp'].sort(() => Math.random() - 0.5).slice(0, 4).join('-');
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));

if (mode === 'silent') {
  writeFileSync(process.env.TUNNEL_STANDIN_STATE, JSON.stringify({ program, pid: process.pid }));
  setInterval(() => {}, 1 << 30);
} else {
  const proxy = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const headers = { ...req.headers, host: target.host };
      const upstream = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.writeHead(502).end('origin unreachable'));
      upstream.end(Buffer.concat(chunks));
    });
  });
  proxy.listen(0, '127.0.0.1', () => {
    const local = `http://127.0.0.1:${proxy.address().port}`;
    if (program === 'cloudflared') {
      const url = `https://${words()}.trycloudflare.com`;
      const err = (line) => process.stderr.write(`${stamp()} INF ${line}\n`);
      err('Thank you for trying Cloudflare Tunnel. Doing so, without a Cloudflare account, is a quick way to experiment and try it out. However, be aware that these account-less Tunnels have no uptime guarantee, are subject to the Cloudflare Online Services Terms of Use (https://www.cloudflare.com/website-terms/), and Cloudflare reserves the right to investigate your use of Tunnels for violations of such terms. If you intend to use Tunnels in production you should use a pre-created named tunnel by following: https://developers.cloudflare.com/cloudflare-one/connections/connect-apps');
      err('Requesting new quick Tunnel on trycloudflare.com...');
      const lines = ['Your quick Tunnel has been created! Visit it at (it may take some time to be reachable):', url];
      const width = Math.max(...lines.map((l) => l.length));
      const border = `+${'-'.repeat(width + 4)}+`;
      err(border);
      for (const line of lines) err(`|  ${line}${' '.repeat(width - line.length)}  |`);
      err(border);
      err('Version 2024.11.1 (Checksum 0000000000000000000000000000000000000000000000000000000000000000)');
      err(`Settings: map[ha-connections:1 protocol:quic url:${target.href.replace(/\/$/, '')}]`);
      err(`Registered tunnel connection connIndex=0 connection=${randomUUID()} event=0 ip=198.41.192.7 location=ams01 protocol=quic`);
      writeFileSync(process.env.TUNNEL_STANDIN_STATE, JSON.stringify({ program, url, local, pid: process.pid }));
    } else {
      const url = `https://${randomBytes(2).toString('hex')}-${randomBytes(2).toString('hex')}.ngrok-free.app`;
      const log = (fields) => process.stdout.write(`${JSON.stringify({ ...fields, t: new Date().toISOString() })}\n`);
      log({ lvl: 'info', msg: 'no configuration paths supplied', obj: 'config' });
      log({ lvl: 'info', msg: 'using configuration at default config path', obj: 'config', path: '/root/.config/ngrok/ngrok.yml' });
      log({ lvl: 'info', msg: 'open config file', obj: 'config', path: '/root/.config/ngrok/ngrok.yml', err: null });
      log({ addr: '127.0.0.1:4040', lvl: 'info', msg: 'starting web service', obj: 'web' });
      log({ id: randomBytes(16).toString('hex'), lvl: 'info', msg: 'client session established', obj: 'tunnels.session' });
      log({ lvl: 'info', msg: 'tunnel session started', obj: 'tunnels.session' });
      log({ addr: target.href.replace(/\/$/, ''), lvl: 'info', msg: 'started tunnel', name: 'command_line', obj: 'tunnels', url });
      writeFileSync(process.env.TUNNEL_STANDIN_STATE, JSON.stringify({ program, url, local, pid: process.pid }));
    }
  });
}
