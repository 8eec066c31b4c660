import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from './helpers/expect-cli.js';
import { testResources } from './helpers/fixture.js';
import { api, createCliEndpoint, sendWebhook } from './helpers/listen.js';
import { CLI_BIN, REPO_ROOT } from './helpers/paths.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * `hookrelay inbound replay` in a terminal: util-linux `script` gives it a pseudo-terminal, and a
 * Ctrl-C typed into that terminal reaches it as a developer's does (the terminal's line discipline
 * turns the byte into SIGINT). The progress bar is drawn in place with its rate and ETA; Ctrl-C asks
 * whether to cancel the job, and each answer is checked through the API. The job goes one message
 * per chunk with a pause of its own, so that it runs long enough to be interrupted whatever else
 * the machine runs: the file is in the parallel group.
 */

const MESSAGES = 8;

interface Job {
  id: string;
  status: string;
  matched: number;
  done: number;
}

let server: RunningServer;
const { configDir, cleanup } = testResources();

beforeAll(async () => {
  server = await startServer({ env: { HOOKRELAY_BULK_CHUNK_SIZE: '1', HOOKRELAY_BULK_CHUNK_DELAY_MS: '1200' } });
});

afterAll(async () => {
  await cleanup();
  await server?.stop();
});

const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;
// eslint-disable-next-line no-control-regex
const stripAnsi = (text: string): string => text.replace(/\x1b\[[0-9;?]*[A-Za-z]/gu, '');

/** The CLI in a pseudo-terminal (120 columns unless told): what it draws (stdout and stderr, as a terminal shows them), typing, its exit code. */
class Terminal {
  private output = '';
  private readonly child: ChildProcessWithoutNullStreams;
  readonly exited: Promise<number>;

  constructor(args: readonly string[], env: Record<string, string>, columns = 120) {
    const inner = `stty cols ${columns} rows 30; exec ${[process.execPath, CLI_BIN, ...args].map((word) => `'${word}'`).join(' ')}`;
    this.child = spawn('script', ['-qefc', inner, '/dev/null'], { cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    const take = (chunk: Buffer): void => void (this.output += chunk.toString('utf8'));
    this.child.stdout.on('data', take);
    this.child.stderr.on('data', take);
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve(code ?? (signal === null ? -1 : 128))));
  }

  /** What it drew so far, colours left out. */
  get text(): string {
    return stripAnsi(this.output);
  }

  async waitFor(pattern: RegExp, timeoutMs = 20_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = pattern.exec(this.text);
      if (match) return match;
      if (Date.now() > deadline) throw new Error(`the terminal never showed ${pattern}:\n${this.text}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Bytes typed at the keyboard. */
  type(text: string): void {
    this.child.stdin.write(text);
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }
}

/** An endpoint with `count` messages, and the CLI's environment. */
async function endpointWithMessages(count = MESSAGES): Promise<{ endpointId: string; env: Record<string, string> }> {
  const endpoint = await createCliEndpoint(server.url, server.apiKey);
  for (let i = 0; i < count; i++) await sendWebhook(server.url, endpoint.token, { headers: [['Content-Type', 'application/json']], body: `{"n":${i}}` });
  const dir = await configDir();
  return { endpointId: endpoint.id, env: { HOME: dir, HOOKRELAY_CONFIG_DIR: dir, HOOKRELAY_API_URL: server.url, HOOKRELAY_API_KEY: server.apiKey, TERM: 'xterm-256color' } };
}

const getJob = (id: string) => api<Job>(server.url, server.apiKey, 'GET', `/v1/bulk-retries/${id}`);

/** Runs the replay until the bar shows a rate and an ETA, then types Ctrl-C and waits for the question. */
async function interruptRunningReplay(): Promise<{ terminal: Terminal; jobId: string }> {
  const { endpointId, env } = await endpointWithMessages();
  const terminal = new Terminal(['inbound', 'replay', endpointId, '--since', '10m'], env);
  try {
    await terminal.waitFor(new RegExp(`${MESSAGES} messages match, to replay\\.`, 'u'));
    const [, jobId] = await terminal.waitFor(/Started job ([0-9a-f-]{36})/u);
    // The bar redrawn in place (carriage return, line cleared): settled / matched, percent, rate, time left.
    const bar = await terminal.waitFor(new RegExp(`\\r\\[(#*)(\\.*)\\] (\\d) / ${MESSAGES}  (\\d+)%  (\\d+)/s, ETA (\\d+)s`, 'u'));
    expect(bar[1]!.length + bar[2]!.length).toBe(24);
    expect(Number(bar[3])).toBeLessThan(MESSAGES);
    expect(Number(bar[5])).toBeGreaterThan(0);
    expect(Number(bar[6])).toBeGreaterThan(0);
    // Before the rate was known, the bar said so.
    expect(terminal.text).toContain(`] 0 / ${MESSAGES}  0%  rate …, ETA …`);
    expect((await getJob(jobId!)).status).toBe('running');
    terminal.type('\x03');
    await terminal.waitFor(new RegExp(`Cancel job ${jobId}\\? Otherwise it keeps running on the server \\(y/N\\): $`, 'u'));
    return { terminal, jobId: jobId! };
  } catch (error) {
    terminal.kill();
    throw error;
  }
}

describe.skipIf(!hasScript)('inbound replay in a terminal', () => {
  it('asks before more than 100 messages; "n" starts nothing (exit 1), nor does Ctrl-C (exit 130)', async () => {
    const { endpointId, env } = await endpointWithMessages(101);
    const jobsBefore = (await api<Job[]>(server.url, server.apiKey, 'GET', '/v1/bulk-retries')).length;
    const terminal = new Terminal(['inbound', 'replay', endpointId, '--since', '10m'], env);
    try {
      await terminal.waitFor(/101 messages match, to replay\.\r\nReplay 101 messages\? \(y\/N\): $/u);
      terminal.type('n\r');
      expect(await terminal.exited).toBe(1);
    } finally {
      terminal.kill();
    }
    expect(terminal.text).toContain('no job started');

    // Ctrl-C at that question stops the command (exit 130), before any job.
    const again = new Terminal(['inbound', 'replay', endpointId, '--since', '10m'], env);
    try {
      await again.waitFor(/Replay 101 messages\? \(y\/N\): $/u);
      again.type('\x03');
      expect(await again.exited).toBe(130);
    } finally {
      again.kill();
    }
    expect(again.text).toMatch(/^INTERRUPTED: interrupted$/mu);
    expect(await api<Job[]>(server.url, server.apiKey, 'GET', '/v1/bulk-retries')).toHaveLength(jobsBefore);
  });

  it('Ctrl-C, then "y": the job is cancelled on the server', async () => {
    const { terminal, jobId } = await interruptRunningReplay();
    terminal.type('y\r');
    expect(await terminal.exited).toBe(130);
    const job = await getJob(jobId);
    expect(job.status).toBe('cancelled');
    expect(job.done).toBeLessThan(MESSAGES);
    expect(terminal.text).toMatch(new RegExp(`Job ${jobId} cancelled: ${job.done} of ${MESSAGES} replayed`, 'u'));
    expect(terminal.text).toContain(`interrupted: job ${jobId} was cancelled`);
    // Cancelled stays cancelled: nothing more is replayed after it.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(await getJob(jobId)).toMatchObject({ status: 'cancelled', done: job.done });
  });

  it('in a narrow terminal the progress line fits on one line: it drops the bar', async () => {
    const { endpointId, env } = await endpointWithMessages();
    const terminal = new Terminal(['inbound', 'replay', endpointId, '--since', '10m'], env, 40);
    try {
      const [, jobId] = await terminal.waitFor(/Started job ([0-9a-f-]{36})/u);
      await terminal.waitFor(new RegExp(`\\r\\d / ${MESSAGES}  \\d+%  [\\d.]+/s, ETA \\d+s`, 'u'));
      terminal.type('\x03');
      await terminal.waitFor(/\(y\/N\): $/u);
      terminal.type('y\r');
      expect(await terminal.exited).toBe(130);
      expect((await getJob(jobId!)).status).toBe('cancelled');
    } finally {
      terminal.kill();
    }
    const drawn = terminal.text.slice(terminal.text.indexOf('Started job')).split('^C')[0]!.split('\r').filter((part) => / \/ \d/u.test(part));
    expect(drawn.length).toBeGreaterThan(0);
    for (const line of drawn) expect(line.length, line).toBeLessThanOrEqual(39);
    expect(drawn.join('')).not.toContain('[');
  });

  it('Ctrl-C, then Enter (no): the job keeps running on the server to its end', async () => {
    const { terminal, jobId } = await interruptRunningReplay();
    terminal.type('\r');
    expect(await terminal.exited).toBe(130);
    expect(terminal.text).toContain(`interrupted: job ${jobId} keeps running`);
    expect(terminal.text).toContain(`hookrelay jobs cancel ${jobId}`);
    expect((await getJob(jobId)).status).toBe('running');
    const ended = await eventually(async () => {
      const job = await getJob(jobId);
      return job.status === 'running' ? undefined : job;
    }, `job ${jobId} to end`, 30_000);
    expect(ended).toMatchObject({ status: 'done', matched: MESSAGES, done: MESSAGES });
  });

  it('a job that ends while the question waits: "y" cancels nothing, and the command ends as the job did (exit 0)', async () => {
    const { terminal, jobId } = await interruptRunningReplay();
    await eventually(async () => ((await getJob(jobId)).status === 'done' ? true : undefined), `job ${jobId} to end`, 30_000);
    terminal.type('y\r');
    expect(await terminal.exited).toBe(0);
    expect(terminal.text).toContain(`Job ${jobId} ended before it could be cancelled.`);
    expect(terminal.text).toContain(`Job ${jobId} done: ${MESSAGES} of ${MESSAGES} replayed`);
    expect(terminal.text).not.toContain('interrupted');
    expect(await getJob(jobId)).toMatchObject({ status: 'done', done: MESSAGES });
  });
});
