import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { expectJsonFailure } from './helpers/expect-cli.js';
import { LocalApp, until } from './helpers/listen.js';
import { CLI_BIN, REPO_ROOT } from './helpers/paths.js';
import { answer, hang, startStubApi, trickle, type StubApi, type StubHandler } from './helpers/stub-api.js';

/**
 * The CLI against a stand-in API on 127.0.0.1 that misbehaves as a compromised or broken server
 * would. Its waits end at --timeout however the server stalls (timed: this file runs in the serial
 * project). And a server (or the senders it quotes) writing control characters: `listen` and the human output of
 * the other commands print them as visible escapes, never as the bytes a terminal obeys (OSC 0 to
 * retitle, CSI 2J to clear, the 8-bit CSI U+009B, OSC 52 to write the clipboard, OSC 8 links, a CR
 * LF that starts a forged line).
 */

const KEY = `hr_${'0'.repeat(40)}`;
const ENDPOINT = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70';
const MESSAGE = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71';
const REJECTION = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f72';
const TIME = '2026-11-27T23:51:16.211Z';
const FORGED = 'FORGED 12:00:00  POST /x  200';
/** Every control a terminal acts on, ending in a line break and a line that looks like the CLI's. */
const HOSTILE = `\u001b]0;pwned\u0007\u001b[2J\u009b2J\u001b]52;c;aGk=\u0007\u001b]8;;https://evil.example\u001b\\link\u001b]8;;\u001b\\\u007f\r\n${FORGED}`;
const ESCAPED = '\\x1b]0;pwned\\x07\\x1b[2J\\x9b2J\\x1b]52;c;aGk=\\x07\\x1b]8;;https://evil.example\\x1b\\link\\x1b]8;;\\x1b\\\\x7f\\r\\nFORGED';

const body = Buffer.from('{"ok":true}');
const message = {
  message_id: MESSAGE,
  content_type: 'application/json',
  headers: {},
  raw_headers: [['content-type', 'application/json']],
  size_bytes: body.length,
  payload_sha256: createHash('sha256').update(body).digest('hex'),
  received_at: TIME,
  method: 'POST',
  path: `/hooks${HOSTILE}`,
  query: `q=${HOSTILE}`,
  event_type: null,
  body: body.toString('base64'),
  body_encoding: 'base64',
};
const rejection = {
  id: REJECTION,
  endpoint_kind: 'inbound',
  endpoint_id: ENDPOINT,
  received_at: TIME,
  reason: 'timestamp_out_of_tolerance',
  detail: `the x-slack-request-timestamp header "${HOSTILE}" is not a Unix time`,
  status: 401,
  method: `POST${HOSTILE}`,
  path: `/slack${HOSTILE}`,
  query: '',
  raw_headers: [['x-slack-request-timestamp', HOSTILE]],
  size_bytes: 2,
  source_address: '203.0.113.9',
};
const inboundRecord = {
  ...message,
  id: MESSAGE,
  inbound_endpoint_id: ENDPOINT,
  status: 'succeeded',
  attempt_count: 1,
  replay_count: 0,
  response_status: 200,
  response_latency_ms: 3,
  last_error: HOSTILE,
  idempotency_key: null,
  delivered_at: TIME,
  failed_at: null,
  raw_headers: [['x-slack-request-timestamp', HOSTILE], [`x-name${HOSTILE}`, 'v']],
  // Text with C1 controls and a lone CR (C0 controls other than white space would make it binary).
  body: Buffer.from('text body\r\n\u009b2J\u0085 and\rX').toString('base64'),
};

let api: StubApi;
let app: LocalApp;
let rejectionReads = 0;

beforeAll(async () => {
  app = await LocalApp.start();
  api = await startStubApi((req, res) => {
    const path = new URL(req.url ?? '/', 'http://stub').pathname;
    const meta = { request_id: 'req-1' };
    if (req.method === 'GET' && path === `/v1/inbound-endpoints/${ENDPOINT}`) return answer(res, 200, { data: { id: ENDPOINT, mode: 'cli', latest_message_id: null }, meta });
    if (req.method === 'GET' && path === `/v1/inbound-endpoints/${ENDPOINT}/listen`) {
      const first = new URL(req.url ?? '/', 'http://stub').searchParams.get('after') !== MESSAGE;
      return answer(res, 200, { data: first ? [message] : [], meta: { ...meta, next_cursor: null, cursor: MESSAGE, has_more: false } });
    }
    // The first read is the listener's starting point (nothing shown); the refusal comes after it.
    if (req.method === 'GET' && path === `/v1/inbound-endpoints/${ENDPOINT}/rejections`) {
      rejectionReads++;
      return answer(res, 200, { data: rejectionReads === 1 ? [] : [rejection], meta: { ...meta, next_cursor: null, has_more: false } });
    }
    if (req.method === 'POST' && path === `/v1/inbound-messages/${MESSAGE}/result`) return answer(res, 200, { data: inboundRecord, meta });
    if (req.method === 'GET' && path === `/v1/inbound-messages/${MESSAGE}`) return answer(res, 200, { data: inboundRecord, meta });
    if (req.method === 'GET' && path === `/v1/inbound-endpoints/${ENDPOINT}/messages`) return answer(res, 404, { error: { code: `NOT_FOUND${HOSTILE}`, message: `no such thing ${HOSTILE}` }, meta });
    return answer(res, 404, { error: { code: 'NOT_FOUND', message: `no route ${req.method} ${path}` }, meta });
  });
});
afterAll(async () => {
  await api?.stop();
  await app?.stop();
});

/** The CLI's output as bytes, as a terminal would get them. */
interface Output {
  stdout: Buffer;
  stderr: Buffer;
  code: Promise<number>;
  kill(): void;
}

async function start(args: readonly string[]): Promise<Output & { done: () => Promise<void> }> {
  const configDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-hostile-'));
  const child = spawn(process.execPath, [CLI_BIN, ...args], {
    cwd: REPO_ROOT,
    env: { HOOKRELAY_CONFIG_DIR: configDir, NO_COLOR: '1', HOOKRELAY_API_URL: api.url, HOOKRELAY_API_KEY: KEY },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) };
  child.stdout.on('data', (chunk: Buffer) => (output.stdout = Buffer.concat([output.stdout, chunk])));
  child.stderr.on('data', (chunk: Buffer) => (output.stderr = Buffer.concat([output.stderr, chunk])));
  const code = new Promise<number>((resolve) => child.once('close', (exit) => resolve(exit ?? -1)));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  void code.then(() => clearTimeout(timer));
  return {
    get stdout() {
      return output.stdout;
    },
    get stderr() {
      return output.stderr;
    },
    code,
    kill: () => child.kill('SIGINT'),
    done: () => rm(configDir, { recursive: true, force: true }),
  };
}

/**
 * The bytes a terminal obeys: C0 other than LF, DEL, and C1, whether as UTF-8 (C2 80–9F) or as a
 * lone 8-bit byte (which is no UTF-8: it decodes to U+FFFD).
 */
function rawControls(bytes: Buffer): string[] {
  const found: string[] = [];
  bytes.forEach((byte, at) => {
    if ((byte < 0x20 && byte !== 0x0a) || byte === 0x7f) found.push(`0x${byte.toString(16)} at ${at}`);
  });
  for (const match of bytes.toString('utf8').matchAll(/[\u0080-\u009f\ufffd]/gu)) found.push(`U+${match[0].charCodeAt(0).toString(16)} at character ${match.index}`);
  return found;
}

function expectEscaped(bytes: Buffer, what: string): string {
  const text = bytes.toString('utf8');
  expect(rawControls(bytes), `${what}: ${JSON.stringify(text)}`).toEqual([]);
  for (const line of text.split('\n')) expect(line.trimStart().startsWith('FORGED'), `${what}: a forged line: ${JSON.stringify(line)}`).toBe(false);
  expect(text, what).toContain(ESCAPED);
  return text;
}

describe('a server that sends control characters', () => {
  it('listen prints the delivery line and the REFUSED line with visible escapes and no raw control byte', async () => {
    const cli = await start(['listen', ENDPOINT, '-f', app.url, '--transport', 'poll', '--from-start']);
    try {
      const shown = (): string => cli.stderr.toString('utf8');
      await until(() => shown().includes('REFUSED 401') && shown().includes(`  ${MESSAGE}`), 'the delivery line and the refusal', 20_000, shown);
      cli.kill();
      expect(await cli.code).toBe(0);
      const text = expectEscaped(cli.stderr, 'listen');
      // The app never got it (no request path holds controls): the line says so, the path shown escaped.
      const delivery = text.split('\n').find((line) => line.includes(`  ${MESSAGE}`));
      expect(delivery).toMatch(/^\d\d:\d\d:\d\d {2}POST \/hooks\\x1b\]0;pwned\\x07\\x1b\[2J\\x9b2J.*… {2}ERR /u);
      const refused = text.split('\n').find((line) => line.includes('REFUSED'));
      expect(refused).toContain(`REFUSED 401 timestamp_out_of_tolerance  POST\\x1b]0;pwned`);
      expect(refused).toContain(`— the x-slack-request-timestamp header "${ESCAPED}`);
      expect(cli.stdout.length).toBe(0);
    } finally {
      cli.kill();
      await cli.code;
      await cli.done();
    }
  });

  it('inbound messages get shows the request, header lines, body and last error escaped; the body keeps its own lines', async () => {
    const cli = await start(['inbound', 'messages', 'get', MESSAGE]);
    expect(await cli.code).toBe(0);
    await cli.done();
    const text = expectEscaped(cli.stdout, 'inbound messages get');
    expect(text).toContain(`Request:`);
    expect(text).toContain(`POST /hooks${ESCAPED}`);
    expect(text).toContain(`x-name${ESCAPED}`);
    expect(text).toMatch(/\nBody\ntext body\n\\x9b2J\\x85 and\\rX\n$/u);
  });

  it("an error's code and message from the server are escaped too", async () => {
    const cli = await start(['inbound', 'messages', 'wait', ENDPOINT, '--timeout', '5s']);
    expect(await cli.code).toBe(4);
    await cli.done();
    const text = expectEscaped(cli.stderr, 'error output');
    expect(text).toMatch(/^NOT_FOUND\\x1b\]0;pwned/u);
    expect(cli.stdout.length).toBe(0);
  });
});

/**
 * The wait's deadline holds for each of its requests: a server that takes the connection and never
 * answers, or answers a byte every half second (each byte restarts an idle timeout), ends the wait at
 * --timeout with exit 9, not at the client's 30 s request timeout or never.
 */
describe('waits against a server that stalls', () => {
  const TIMEOUT_MS = 3_000;
  /** Start-up of the CLI and its exit, on a busy machine: far below the 31 s (or never) of a wait without its deadline. */
  const MARGIN_MS = 5_000;
  const stubs: StubApi[] = [];
  afterAll(async () => {
    await Promise.all(stubs.map((stub) => stub.stop()));
  });

  const cases: [string, StubHandler][] = [
    ['never answers', hang],
    ['trickles a byte every 0.5 s', trickle(500)],
  ];
  const commands: [string, string[]][] = [
    ['messages wait', ['messages', 'wait', '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71']],
    ['inbound messages wait', ['inbound', 'messages', 'wait', '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70']],
  ];
  for (const [serverKind, handler] of cases) {
    for (const [name, args] of commands) {
      it(`${name} --timeout 3s against a server that ${serverKind}: exit 9 within the timeout`, async () => {
        const stub = await startStubApi(handler);
        stubs.push(stub);
        const started = Date.now();
        const result = await runCli([...args, '--timeout', '3s', '--json'], { env: { HOOKRELAY_API_URL: stub.url, HOOKRELAY_API_KEY: KEY }, timeoutMs: TIMEOUT_MS + 10_000 });
        const elapsed = Date.now() - started;
        const error = expectJsonFailure(result, 9, 'WAIT_TIMEOUT');
        expect(error.message).toMatch(/ within 3s$/u);
        expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT_MS);
        expect(elapsed).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
        expect(stub.requests.length).toBeGreaterThan(0);
      });
    }
  }
});

