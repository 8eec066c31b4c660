import { PassThrough } from 'node:stream';
import type { BulkJobOut } from '@hookrelay/shared';
import type { HookrelayClient } from '@hookrelay/shared/client';
import { describe, expect, it } from 'vitest';
import { ProgressMeter, runBulkJob, type BulkJobCommand, type BulkJobRequest } from '../src/bulk-job.js';
import { CliFailure } from '../src/errors.js';
import { bulkWindow, parseStatuses } from '../src/flags/bulk.js';
import { formatBulkJob, formatJobOutcome, formatProgress } from '../src/format/bulk-jobs.js';
import { plainStyle } from '../src/format/style.js';

const ID = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f72';

function job(fields: Partial<BulkJobOut> = {}): BulkJobOut {
  return {
    id: ID,
    kind: 'outbound',
    status: 'running',
    filter: { endpoint_id: 'ep_0123456789abcdef0123456789abcdef', owner_id: null, event_type: null, status: ['failed_permanent'], created_after: '2026-05-01T08:00:00.000Z', created_before: null },
    matched: 400,
    done: 0,
    skipped: 0,
    failed: 0,
    last_error: null,
    created_at: '2026-05-01T10:00:00.000Z',
    finished_at: null,
    ...fields,
  } as BulkJobOut;
}

/** A command whose output is collected, with a client that answers the job reads from `reads` in turn. */
function harness(options: { interactive?: boolean; json?: boolean; flags?: Partial<BulkJobCommand['flags']>; reads?: BulkJobOut[] } = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const json: unknown[] = [];
  const reads = [...(options.reads ?? [])];
  const client = { bulkJobs: { get: async () => ({ data: reads.shift() ?? job({ status: 'done' }) }), cancel: async () => ({ data: job({ status: 'cancelled' }) }) } } as unknown as HookrelayClient;
  const command: BulkJobCommand = {
    client,
    json: options.json ?? false,
    interactive: options.interactive ?? false,
    progressInPlace: false,
    streams: { input: new PassThrough(), output: new PassThrough() },
    style: { out: plainStyle, err: plainStyle },
    print: (text) => void (options.json ? undefined : out.push(text)),
    note: (text) => void (options.json ? undefined : err.push(text)),
    writeErr: (text) => void err.push(text),
    logJson: (value) => void json.push(value),
    flags: { dryRun: false, yes: false, wait: false, ...options.flags },
    pollMs: 5,
  };
  return { command, out, err, json };
}

function request(matched: number, started = job({ matched })): BulkJobRequest & { starts: number } {
  const r = {
    verb: 'retry' as const,
    starts: 0,
    count: async () => matched,
    start: async () => {
      r.starts++;
      return started;
    },
  };
  return r;
}

describe('runBulkJob', () => {
  it('with --dry-run prints the estimate and starts nothing', async () => {
    const h = harness({ flags: { dryRun: true } });
    const r = request(1234);
    expect(await runBulkJob(r, h.command)).toEqual({ matched: 1234 });
    expect(h.out).toEqual(['1,234 messages match, to retry.']);
    expect(r.starts).toBe(0);
  });

  it('starts nothing when nothing matches, but under --json starts the job all the same (it is done at once)', async () => {
    const human = harness();
    const none = request(0, job({ matched: 0, status: 'done' }));
    expect(await runBulkJob(none, human.command)).toEqual({ matched: 0 });
    expect(human.out).toEqual(['No messages match: nothing to retry.']);
    expect(none.starts).toBe(0);
    expect(await runBulkJob(none, harness({ json: true }).command)).toMatchObject({ status: 'done', matched: 0 });
    expect(none.starts).toBe(1);
  });

  it('refuses more than 100 messages without a terminal and without --yes, before starting anything (exit 2)', async () => {
    const r = request(101);
    const failure = await runBulkJob(r, harness().command).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(CliFailure);
    expect(failure).toMatchObject({ code: 'CONFIRMATION_REQUIRED', exitCode: 2, message: 'refusing to retry 101 messages without confirmation: stdin is not a terminal' });
    expect((failure as CliFailure).hint).toContain('--yes');
    expect(r.starts).toBe(0);
  });

  it('starts 100 messages or fewer without asking, and more with --yes', async () => {
    const small = request(100, job({ matched: 100, status: 'done', done: 100 }));
    await runBulkJob(small, harness({ json: true }).command);
    expect(small.starts).toBe(1);
    const large = request(5000, job({ matched: 5000 }));
    expect(await runBulkJob(large, harness({ json: true, flags: { yes: true } }).command)).toMatchObject({ id: ID, status: 'running' });
    expect(large.starts).toBe(1);
  });

  it('asks on a terminal, and an answer other than yes starts nothing (exit 1)', async () => {
    const h = harness({ interactive: true });
    const r = request(500);
    const pending = runBulkJob(r, h.command);
    (h.command.streams.input as PassThrough).write('n\n');
    await expect(pending).rejects.toMatchObject({ code: 'ABORTED', exitCode: 1 });
    expect(r.starts).toBe(0);
  });

  it('follows the job until it ends, with progress lines on stderr and the outcome on stdout', async () => {
    const h = harness({ flags: { yes: true }, reads: [job({ done: 200 }), job({ done: 399, skipped: 1, status: 'done', finished_at: '2026-05-01T10:01:00.000Z' })] });
    const final = await runBulkJob(request(400), h.command);
    expect(final).toMatchObject({ status: 'done', done: 399 });
    expect(h.out.at(-1)).toBe(`Job ${ID} done: 399 of 400 retried, 1 skipped (deleted meanwhile)`);
    expect(h.err.filter((line) => line.startsWith('['))).toEqual([
      `[${'.'.repeat(24)}] 0 / 400  0%  rate …, ETA …\n`,
      expect.stringMatching(/^\[#{24}\] 399 \/ 400 \(1 skipped, 0 failed\)  100%  /),
    ]);
  });

  it('with --json --wait prints nothing but the final job; a job cancelled elsewhere exits 1 with it', async () => {
    const h = harness({ json: true, flags: { wait: true, yes: true }, reads: [job({ status: 'cancelled', done: 10, finished_at: '2026-05-01T10:01:00.000Z' })] });
    await expect(runBulkJob(request(400), h.command)).rejects.toMatchObject({ code: 'ABORTED', exitCode: 1 });
    expect(h.json).toEqual([expect.objectContaining({ status: 'cancelled', done: 10 })]);
    expect(h.err).toEqual([]);
  });
});

describe("a server's hostile job", () => {
  it('reaches the terminal escaped: its id in the notes and the question, its counts in the estimate and the progress', async () => {
    const hostile = job({ id: 'j\u001b[2J' as string, matched: '4\u001b]0;x\u0007' as unknown as number, done: '\r1' as unknown as number });
    const h = harness({ interactive: true, reads: [hostile] });
    const r = request(5, hostile);
    r.count = async () => '\u001b[31m5' as unknown as number;
    let reads = 0;
    h.command.client = { bulkJobs: { get: async () => (reads++, { data: hostile }), cancel: async () => ({ data: { ...hostile, status: 'cancelled' } }) } } as unknown as HookrelayClient;
    h.command.pollMs = 20;
    const asked: string[] = [];
    (h.command.streams.output as PassThrough).on('data', (chunk: Buffer) => asked.push(chunk.toString('utf8')));
    const pending = runBulkJob(r, h.command).catch((error: unknown) => error);
    while (reads === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    process.emit('SIGINT');
    (h.command.streams.input as PassThrough).write('n\n');
    await pending;
    const shown = [...h.out, ...h.err].join('\n');
    expect(shown).toContain('Started job j\\x1b[2J (4\\x1b]0;x\\x07 messages)');
    expect(shown).toContain('\\x1b[31m5 messages match');
    expect(shown).toContain('] \\r1 / 4\\x1b]0;x\\x07');
    expect(shown).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/u);
    // The question (readline draws it with its own cursor codes) names the job escaped.
    expect(asked.join('')).toContain('Cancel job j\\x1b[2J? Otherwise');
  });
});

describe('Ctrl-C while a job runs', () => {
  /** Runs a followed job whose first read is `running`, interrupts it, answers `answer`; the client's reads after that come from `after`. */
  async function interrupt(answer: string, after: BulkJobOut, interactive = true) {
    const h = harness({ interactive, flags: { yes: true } });
    const calls: string[] = [];
    let reads = 0;
    h.command.client = {
      bulkJobs: {
        get: async () => (calls.push('get'), { data: reads++ === 0 ? job({ done: 50 }) : after }),
        cancel: async () => (calls.push('cancel'), { data: after }),
      },
    } as unknown as HookrelayClient;
    h.command.pollMs = 20;
    const pending = runBulkJob(request(400), h.command);
    // Once the first read has come back: a Ctrl-C as the terminal delivers it.
    while (reads === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    process.emit('SIGINT');
    (h.command.streams.input as PassThrough).write(answer);
    const outcome = await pending.then(
      (value) => ({ value, error: undefined }),
      (error: unknown) => ({ value: undefined, error }),
    );
    return { ...h, calls, ...outcome };
  }
  const ended = (status: 'done' | 'cancelled') => job({ status, done: status === 'done' ? 400 : 60, finished_at: '2026-05-01T10:01:00.000Z' });

  it('"y" cancels the job and exits 130 with its counts', async () => {
    const r = await interrupt('y\n', ended('cancelled'));
    expect(r.calls).toEqual(['get', 'cancel']);
    expect(r.error).toMatchObject({ code: 'INTERRUPTED', exitCode: 130, message: `interrupted: job ${ID} was cancelled` });
    expect(r.out.at(-1)).toBe(`Job ${ID} cancelled: 60 of 400 retried`);
  });

  it('no leaves it running (exit 130, with how to follow or cancel it)', async () => {
    const r = await interrupt('\n', job({ done: 70 }));
    expect(r.calls).toEqual(['get', 'get']);
    expect(r.error).toMatchObject({ code: 'INTERRUPTED', exitCode: 130, message: `interrupted: job ${ID} keeps running` });
  });

  it('a job that ended while the question waited ends the command as a job followed to its end, whatever the answer', async () => {
    for (const answer of ['y\n', 'n\n']) {
      const r = await interrupt(answer, ended('done'));
      expect(r.error).toBeUndefined();
      expect(r.value).toMatchObject({ status: 'done', done: 400 });
      expect(r.out.at(-1)).toBe(`Job ${ID} done: 400 of 400 retried`);
      expect(r.err.at(-1)).toBe(`Job ${ID} ended before ${answer === 'y\n' ? 'it could be cancelled' : 'the answer'}.`);
    }
  });

  it('without a terminal asks nothing: the job keeps running', async () => {
    const r = await interrupt('y\n', ended('cancelled'), false);
    expect(r.calls).toEqual(['get']);
    expect(r.error).toMatchObject({ code: 'INTERRUPTED', exitCode: 130, message: `interrupted: job ${ID} keeps running` });
  });
});

describe('the progress of a job', () => {
  it('has a rate and an ETA once a second of progress is seen', () => {
    const meter = new ProgressMeter();
    expect(meter.observe(job({ done: 100 }), 10_000)).toBeNull();
    expect(meter.observe(job({ done: 150 }), 10_500)).toBeNull();
    expect(meter.observe(job({ done: 300 }), 12_000)).toEqual({ perSecond: 100, etaSeconds: 1 });
  });

  it('is a bar, the counts, the rate and the time left', () => {
    expect(formatProgress(job({ done: 100, matched: 400 }), { perSecond: 250.4, etaSeconds: 75 }, plainStyle)).toBe(`[######${'.'.repeat(18)}] 100 / 400  25%  250/s, ETA 1m 15s`);
    expect(formatProgress(job({ done: 10, matched: 400 }), { perSecond: 0.1, etaSeconds: 3725 }, plainStyle)).toMatch(/ETA 1h 02m$/u);
    expect(formatProgress(job({ done: 390, matched: 400 }), { perSecond: 1, etaSeconds: 9.4 }, plainStyle)).toMatch(/ETA 9s$/u);
  });

  it('fits the width it is given: without the bar, then cut short', () => {
    const progress = job({ done: 1342, matched: 3214, skipped: 1 });
    const rate = { perSecond: 480, etaSeconds: 3 };
    const full = formatProgress(progress, rate, plainStyle);
    expect(full).toBe(`[##########${'.'.repeat(14)}] 1,342 / 3,214 (1 skipped, 0 failed)  41%  480/s, ETA 3s`);
    expect(formatProgress(progress, rate, plainStyle, full.length)).toBe(full);
    expect(formatProgress(progress, rate, plainStyle, full.length - 1)).toBe('1,342 / 3,214 (1 skipped, 0 failed)  41%  480/s, ETA 3s');
    expect(formatProgress(progress, rate, plainStyle, 20)).toBe('1,342 / 3,214 (1 sk…');
  });

  it('gives a rate below ten a second with its tenths, so that a slow job does not read as stopped', () => {
    const rate = (perSecond: number) => /\s(\S+|< 0\.1\/s), ETA/u.exec(formatProgress(job({ done: 10 }), { perSecond, etaSeconds: 60 }, plainStyle))![1];
    expect([rate(0.1), rate(0.83), rate(2), rate(9.94), rate(10.4), rate(0.04)]).toEqual(['0.1/s', '0.8/s', '2/s', '9.9/s', '10/s', '< 0.1/s']);
  });
});

describe('a job as the CLI shows it', () => {
  it('escapes the text of its filter and its last error', () => {
    const hostile = job({ kind: 'outbound', filter: { endpoint_id: null, owner_id: 'acme\u001b[2J', event_type: 'x\r\ny', status: ['failed_permanent', 'pending_retry'], created_after: '2026-05-01T08:00:00.000Z', created_before: null }, failed: 2, last_error: 'endpoint ep_1 was deleted\u001b]0;t\u0007' });
    const text = [formatBulkJob(hostile, plainStyle, new Date('2026-05-01T10:00:10Z')), formatJobOutcome(hostile, plainStyle)].join('\n');
    expect(text).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/u);
    expect(text).toContain('owner acme\\x1b[2J');
    expect(text).toContain('type x\\r\\ny');
    expect(formatBulkJob(job(), plainStyle, new Date('2026-05-01T10:00:10Z'))).toMatch(
      /^Filter: +failed_permanent, endpoint ep_0123456789abcdef0123456789abcdef, created 2026-05-01T08:00:00\.000Z to when the job started$/mu,
    );
  });
});

describe('the flags of a bulk job', () => {
  it('need --since, and read times as durations ago or ISO times', () => {
    const now = Date.parse('2026-05-01T12:00:00Z');
    expect(() => bulkWindow({}, now)).toThrow('--since is required');
    expect(bulkWindow({ since: '2h' }, now)).toEqual({ from: '2026-05-01T10:00:00.000Z', to: undefined });
    expect(bulkWindow({ since: '2026-05-01T08:00:00Z', until: '30m' }, now)).toEqual({ from: '2026-05-01T08:00:00.000Z', to: '2026-05-01T11:30:00.000Z' });
  });

  it('take statuses as comma lists or repeated, each known and kept once', () => {
    expect(parseStatuses(['failed_permanent,pending_retry', 'failed_permanent'])).toEqual(['failed_permanent', 'pending_retry']);
    expect(parseStatuses(undefined)).toBeUndefined();
    expect(() => parseStatuses(['failed'])).toThrow('--status: "failed" is not a status');
  });
});
