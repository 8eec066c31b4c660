import { createServer, request, type Server } from 'node:http';
import { connect, createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';

/**
 * A small HTTP proxy in front of the server, as corporate proxies and load balancers are: plain
 * requests pass; WebSocket upgrades pass, are refused (`refuse`), or pass and can later be made
 * silent without closing (`blackhole`: a peer that vanished without a FIN).
 */
export class TestProxy {
  upgrades: 'pass' | 'refuse' = 'pass';
  refusedUpgrades = 0;
  passedUpgrades = 0;
  private readonly tunnels = new Set<{ client: Socket; upstream: Socket }>();
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(target: string): Promise<TestProxy> {
    const upstream = new URL(target);
    const server = createServer((req, res) => {
      const forward = request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on('error', () => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
        res.end('bad gateway');
      });
      req.pipe(forward);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const proxy = new TestProxy(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on('connection', (socket) => {
      proxy.sockets.add(socket);
      socket.on('close', () => proxy.sockets.delete(socket));
    });
    server.on('upgrade', (req, client: Socket, head: Buffer) => {
      if (proxy.upgrades === 'refuse') {
        proxy.refusedUpgrades += 1;
        const body = '<html><body>502 Bad Gateway: WebSockets are not allowed here</body></html>';
        client.end(`HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/html\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
        return;
      }
      proxy.passedUpgrades += 1;
      const up = connect(Number(upstream.port), upstream.hostname, () => {
        const lines = [`${req.method} ${req.url} HTTP/1.1`];
        for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
        up.write(`${lines.join('\r\n')}\r\n\r\n`);
        if (head.length > 0) up.write(head);
        client.pipe(up);
        up.pipe(client);
      });
      proxy.sockets.add(up);
      up.on('close', () => proxy.sockets.delete(up));
      const tunnel = { client, upstream: up };
      proxy.tunnels.add(tunnel);
      const end = (): void => {
        proxy.tunnels.delete(tunnel);
        client.destroy();
        up.destroy();
      };
      client.on('error', end);
      up.on('error', end);
      client.on('close', end);
      up.on('close', end);
    });
    return proxy;
  }

  /** Every open tunnel stops carrying bytes, in both directions, and nothing is closed. */
  blackhole(): void {
    for (const { client, upstream } of this.tunnels) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
    this.tunnels.clear();
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * A plain TCP relay in front of a server on 127.0.0.1: every byte passes, both ways, until
 * `silence()`, after which the connections open then carry nothing more in either direction and
 * are never closed, whatever either end does: a network that silently drops everything (a laptop
 * that left its Wi-Fi, a NAT that forgot the connection). Connections made after it pass again.
 */
export class TcpRelay {
  private readonly pairs = new Set<{ client: Socket; upstream: Socket; silenced: boolean }>();

  private constructor(
    private readonly server: NetServer,
    readonly url: string,
  ) {}

  static async start(target: string): Promise<TcpRelay> {
    const upstream = new URL(target);
    let relay: TcpRelay | undefined;
    const server = createNetServer((client) => {
      const up = connect(Number(upstream.port), upstream.hostname);
      const pair = { client, upstream: up, silenced: false };
      relay!.pairs.add(pair);
      client.pipe(up);
      up.pipe(client);
      const end = (): void => {
        // A silenced connection stays open at the other end: nothing tells it the peer is gone.
        if (pair.silenced) return;
        relay!.pairs.delete(pair);
        client.destroy();
        up.destroy();
      };
      for (const socket of [client, up]) {
        socket.on('error', end);
        socket.on('close', end);
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    relay = new TcpRelay(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return relay;
  }

  /** The connections open now stop carrying bytes and stay open; returns how many there were. */
  silence(): number {
    let count = 0;
    for (const pair of this.pairs) {
      if (pair.silenced) continue;
      pair.silenced = true;
      count += 1;
      pair.client.unpipe(pair.upstream);
      pair.upstream.unpipe(pair.client);
      pair.client.pause();
      pair.upstream.pause();
    }
    return count;
  }

  async stop(): Promise<void> {
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
