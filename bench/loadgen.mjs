// HTTP load from a process of its own. Two loads driven from one event loop time each other's
// client work into their latencies, and autocannon's `overallRate` sends each second's quota as a
// burst at the start of the second and keeps latencies in whole milliseconds; this sends a paced
// load evenly (a request every 1/rate s, each timed from when it was due, so a late send counts
// against the server and not for it) and times every answer in microseconds.
//
//   const result = await runLoad({ origin, path, method, headers, body, mode, connections, rate, durationMs, startAt });
//
// mode 'closed': `connections` keep-alive connections, each sending again as soon as it has its
// answer. mode 'paced': `rate` requests a second, evenly, over at most `connections` connections
// (a request due while all are busy waits, and that wait is in its latency). `startAt` (epoch ms)
// lets two loads start together whatever their processes' start-up took.
// Result: { sent, answered, errors, statuses: { '200': n, … }, rate (answered/s), cpuMs (the load's
// own), latencyMs: { p50, p90, p99, p999, max } }; with `samples: true` also every answer's latency,
// `samplesMs`, in the order of the answers (to take quantiles over several loads together).
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import net from 'node:net';

const ROLE_ENV = 'HOOKRELAY_BENCH_LOADGEN';
const DRAIN_MS = 10_000;

/** Runs one load in a child process; resolves with its result. */
export function runLoad(spec) {
  const child = fork(fileURLToPath(import.meta.url), [], { env: { ...process.env, [ROLE_ENV]: '1' }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    let result;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`load ${spec.path} did not finish`));
    }, Math.max(0, spec.startAt - Date.now()) + spec.durationMs + DRAIN_MS + 30_000);
    child.once('message', (message) => (result = message));
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (result?.error) reject(new Error(result.error));
      else if (result) resolve(result);
      else reject(new Error(`load ${spec.path} exited (${code ?? signal}) without a result`));
    });
    child.send(spec);
  });
}

export function quantile(sorted, q) {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

/**
 * One keep-alive HTTP/1.1 connection sending the same prepared request: a write of its bytes and a
 * read of the answer's status line, Content-Length and body. undici spends as much CPU on a request
 * as the server does refusing one, and on a machine the load shares with the server that CPU is
 * the server's too; a flood from the internet costs its sender's machine, not the server's.
 */
class Connection {
  constructor(host, port, request, onAnswer, onError) {
    this.request = request;
    this.onAnswer = onAnswer;
    this.onError = onError;
    this.buffer = Buffer.alloc(0);
    this.busy = false;
    this.socket = net.connect({ host, port, noDelay: true });
    this.socket.on('data', (chunk) => this.read(chunk));
    this.socket.on('error', (error) => this.fail(error));
    this.socket.on('close', () => this.fail(new Error('connection closed')));
  }

  send(dueNs) {
    this.busy = true;
    this.dueNs = dueNs;
    this.socket.write(this.request);
  }

  read(chunk) {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end === -1) return;
      const head = this.buffer.toString('latin1', 0, end);
      const status = Number(head.slice(9, 12));
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
      const bodyLength = length ? Number(length[1]) : 0;
      if (!length && status !== 204 && status !== 304) return this.fail(new Error(`an answer without Content-Length: ${head.split('\r\n', 1)[0]}`));
      if (this.buffer.length < end + 4 + bodyLength) return;
      this.buffer = this.buffer.subarray(end + 4 + bodyLength);
      // An answer on an idle connection is the server closing it (a 408 after its header timeout).
      if (!this.busy) return this.fail(new Error(`the server closed an idle connection: ${head.split('\r\n', 1)[0]}`));
      this.busy = false;
      this.onAnswer(this, status, this.dueNs);
    }
  }

  fail(error) {
    if (this.failed) return;
    this.failed = true;
    this.socket.destroy();
    this.onError(this, error);
  }

  close() {
    this.failed = true;
    this.socket.destroy();
  }
}

function prepare({ origin, path, method = 'POST', headers = {}, body = '' }) {
  const url = new URL(origin);
  const bytes = Buffer.from(body);
  const lines = [`${method} ${path} HTTP/1.1`, `host: ${url.host}`, `content-length: ${bytes.length}`, ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)];
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port), request: Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), bytes]) };
}

async function load(spec) {
  const { mode, connections, rate, durationMs, startAt } = spec;
  if (mode !== 'closed' && mode !== 'paced') throw new Error(`mode ${mode}`);
  const { host, port, request } = prepare(spec);
  const latenciesUs = [];
  const statuses = Object.create(null);
  let sent = 0;
  let errors = 0;
  let start = 0n;
  let end = 0n;
  const idle = [];
  const waiting = [];
  let settle;
  const finished = new Promise((resolve) => (settle = resolve));
  let inFlight = 0;
  let sending = true;
  const maybeDone = () => {
    if (!sending && inFlight === 0) settle();
  };
  const dispatch = (connection, dueNs) => {
    sent++;
    inFlight++;
    connection.send(dueNs);
  };
  const onAnswer = (connection, status, dueNs) => {
    inFlight--;
    latenciesUs.push(Number(process.hrtime.bigint() - dueNs) / 1000);
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (mode === 'closed') {
      if (sending && process.hrtime.bigint() < end) dispatch(connection, process.hrtime.bigint());
    } else if (waiting.length > 0) dispatch(connection, waiting.shift());
    else idle.push(connection);
    maybeDone();
  };
  const onError = (connection, _error) => {
    if (connection.busy) {
      inFlight--;
      errors++;
    }
    const at = idle.indexOf(connection);
    if (at !== -1) idle.splice(at, 1);
    maybeDone();
  };
  const pool = Array.from({ length: connections }, () => new Connection(host, port, request, onAnswer, onError));
  await Promise.all(pool.map((c) => new Promise((resolve, reject) => c.socket.once('connect', resolve).once('error', reject))));
  idle.push(...pool);

  await new Promise((resolve) => setTimeout(resolve, Math.max(0, startAt - Date.now())));
  const cpuBefore = process.cpuUsage();
  start = process.hrtime.bigint();
  end = start + BigInt(durationMs) * 1_000_000n;
  if (mode === 'closed') {
    for (const connection of idle.splice(0)) dispatch(connection, process.hrtime.bigint());
    setTimeout(() => {
      sending = false;
      maybeDone();
    }, durationMs);
  } else {
    const intervalNs = 1e9 / rate;
    let next = 0;
    const tick = () => {
      const now = process.hrtime.bigint();
      for (;;) {
        const due = start + BigInt(Math.round(next * intervalNs));
        if (due >= end) {
          clearInterval(timer);
          sending = false;
          maybeDone();
          return;
        }
        if (due > now) return;
        next++;
        // The connection idle longest: each is used every so often, so none outlives the server's timeouts.
        const connection = idle.shift();
        if (connection) dispatch(connection, due);
        else waiting.push(due);
      }
    };
    const timer = setInterval(tick, 1);
    tick();
  }
  await Promise.race([finished, new Promise((resolve) => setTimeout(resolve, durationMs + DRAIN_MS))]);
  const elapsedS = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  for (const connection of pool) connection.close();
  errors += waiting.length;
  const sorted = Float64Array.from(latenciesUs).sort();
  const ms = (q) => quantile(sorted, q) / 1000;
  return {
    sent: sent + waiting.length,
    answered: sorted.length,
    errors,
    statuses: { ...statuses },
    rate: sorted.length / elapsedS,
    cpuMs: (cpu.user + cpu.system) / 1000,
    latencyMs: { p50: ms(0.5), p90: ms(0.9), p99: ms(0.99), p999: ms(0.999), max: sorted.length ? sorted[sorted.length - 1] / 1000 : Number.NaN },
    ...(spec.samples ? { samplesMs: latenciesUs.map((us) => us / 1000) } : {}),
  };
}

if (process.env[ROLE_ENV] === '1' && process.send) {
  process.once('message', (spec) => {
    load(spec).then(
      (result) => process.send(result, () => process.exit(0)),
      (error) => process.send({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) }, () => process.exit(1)),
    );
  });
}
