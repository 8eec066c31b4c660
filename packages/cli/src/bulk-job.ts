import type { BulkJobEstimateOut, BulkJobOut } from '@hookrelay/shared';
import type { HookrelayClient } from '@hookrelay/shared/client';
import { CliErrorCode, CliFailure } from './errors.js';
import { ExitCode } from './exit-codes.js';
import { formatEstimate, formatJobOutcome, formatProgress, messageCount, settledCount } from './format/bulk-jobs.js';
import type { Style } from './format/style.js';
import { terminalText } from './format/text.js';
import { confirm, type PromptStreams } from './prompt.js';
import { sleepUnlessStopped, StopSignals } from './signals.js';

/**
 * What `messages retry --since …` and `inbound replay` share (docs/cli.md, Bulk retries and
 * replays): the estimate, the question before a large job, the job, its progress on stderr until it
 * ends, and Ctrl-C, which asks whether to cancel the job or leave it running.
 */

/** A job of more messages than this is asked about first (or needs --yes). */
export const CONFIRM_ABOVE = 100;
/** How often a followed job is read. */
export const PROGRESS_POLL_MS = 1000;
/** Without a terminal, a progress line at most this often. */
const PLAIN_PROGRESS_EVERY_MS = 5000;

/** The job a command starts: how it counts and how it starts. */
export interface BulkJobRequest {
  verb: 'retry' | 'replay';
  count(): Promise<number>;
  start(): Promise<BulkJobOut>;
}

/** What the command gives of itself: its output, its terminal and its flags. */
export interface BulkJobCommand {
  client: HookrelayClient;
  json: boolean;
  /** stdin is a terminal to ask on. */
  interactive: boolean;
  /** stderr is a terminal: the progress line is redrawn in place. */
  progressInPlace: boolean;
  /** The terminal's width now (it may change while the job runs); undefined when not known. */
  columns?: () => number | undefined;
  streams: PromptStreams;
  style: { out: Style; err: Style };
  print(text: string): void;
  note(text: string): void;
  /** Writes to stderr as it is (the progress line). */
  writeErr(text: string): void;
  logJson(value: unknown): void;
  flags: { dryRun: boolean; yes: boolean; wait: boolean };
  /** How often the job is read while followed (default PROGRESS_POLL_MS). */
  pollMs?: number;
}

/**
 * The rate of a job from the counts seen since it was first followed, and the time left at that
 * rate; null until a second's worth of progress has been seen.
 */
export class ProgressMeter {
  private first: { at: number; settled: number } | undefined;

  observe(job: BulkJobOut, nowMs: number): { perSecond: number; etaSeconds: number } | null {
    const settled = settledCount(job);
    this.first ??= { at: nowMs, settled };
    const elapsed = (nowMs - this.first.at) / 1000;
    const moved = settled - this.first.settled;
    if (elapsed < 1 || moved <= 0) return null;
    const perSecond = moved / elapsed;
    return { perSecond, etaSeconds: Math.max(0, job.matched - settled) / perSecond };
  }
}

/** Counts, asks when it must, starts the job and, unless --json without --wait, follows it to its end. */
export async function runBulkJob(request: BulkJobRequest, command: BulkJobCommand): Promise<BulkJobOut | BulkJobEstimateOut> {
  const matched = await request.count();
  command.print(formatEstimate(matched, request.verb, command.style.out));
  // Nothing to do starts nothing on a terminal; a script still gets the job it asked for (done at once).
  if (command.flags.dryRun || (matched === 0 && !command.json)) return { matched };
  if (matched > CONFIRM_ABOVE && !command.flags.yes) await confirmLargeJob(request.verb, matched, command);
  const job = await request.start();
  const id = terminalText(String(job.id));
  command.note(command.style.err.dim(`Started job ${id} (${messageCount(job.matched)}); \`hookrelay jobs get ${id}\` shows it.`));
  if (command.json && !command.flags.wait) return job;
  const final = await followJob(job, command);
  if (final.status === 'cancelled') {
    if (command.json) command.logJson(final);
    else command.print(formatJobOutcome(final, command.style.out));
    throw new CliFailure(CliErrorCode.ABORTED, `job ${final.id} was cancelled before it ended`, ExitCode.GENERIC, `\`hookrelay jobs get ${final.id}\` shows how far it got.`);
  }
  command.print(formatJobOutcome(final, command.style.out));
  return final;
}

async function confirmLargeJob(verb: 'retry' | 'replay', matched: number, command: BulkJobCommand): Promise<void> {
  if (!command.interactive) {
    throw new CliFailure(
      CliErrorCode.CONFIRMATION_REQUIRED,
      `refusing to ${verb} ${messageCount(matched)} without confirmation: stdin is not a terminal`,
      ExitCode.USAGE,
      `Pass --yes to start the job without asking, or --dry-run to count only; more than ${CONFIRM_ABOVE} messages are always asked about.`,
    );
  }
  const yes = await confirm(command.streams, `${verb === 'retry' ? 'Retry' : 'Replay'} ${messageCount(matched)}?`);
  if (!yes) throw new CliFailure(CliErrorCode.ABORTED, 'no job started', ExitCode.GENERIC);
}

/** Reads the job until it ends, with its progress on stderr; Ctrl-C asks what to do with it. */
async function followJob(started: BulkJobOut, command: BulkJobCommand): Promise<BulkJobOut> {
  const meter = new ProgressMeter();
  const stop = new StopSignals().install();
  let job = started;
  let shown = false;
  let lastPlainLine = -Infinity;
  const show = (): void => {
    if (command.json) return;
    const width = command.progressInPlace ? command.columns?.() : undefined;
    // One column short of the width: a line that fills it leaves the cursor past the end on some terminals.
    const line = formatProgress(job, meter.observe(job, Date.now()), command.style.err, width === undefined || width < 2 ? Infinity : width - 1);
    if (command.progressInPlace) {
      command.writeErr(`\r\x1b[2K${line}`);
      shown = true;
    } else if (Date.now() - lastPlainLine >= PLAIN_PROGRESS_EVERY_MS || job.status !== 'running') {
      command.writeErr(`${line}\n`);
      lastPlainLine = Date.now();
    }
  };
  try {
    show();
    while (job.status === 'running') {
      await sleepUnlessStopped(command.pollMs ?? PROGRESS_POLL_MS, stop.signal);
      if (stop.stopping) break;
      job = (await command.client.bulkJobs.get(job.id)).data;
      show();
    }
  } finally {
    stop.dispose();
    if (shown) command.writeErr('\n');
  }
  return job.status === 'running' ? interrupted(job, command) : job;
}

/**
 * Ctrl-C while a job runs: on a terminal, cancel it or leave it running, as answered; without one,
 * it runs on. The job may end while the question waits: then its outcome is what is said, since
 * neither "cancelled" nor "keeps running" would be true.
 */
async function interrupted(job: BulkJobOut, command: BulkJobCommand): Promise<BulkJobOut> {
  const leftRunning = new CliFailure(
    CliErrorCode.INTERRUPTED,
    `interrupted: job ${job.id} keeps running`,
    ExitCode.INTERRUPTED,
    `\`hookrelay jobs get ${job.id}\` shows how far it got; \`hookrelay jobs cancel ${job.id}\` stops it.`,
  );
  if (!command.interactive) throw leftRunning;
  let cancel: boolean;
  try {
    cancel = await confirm(command.streams, `Cancel job ${terminalText(String(job.id))}? Otherwise it keeps running on the server`);
  } catch {
    throw leftRunning;
  }
  // Cancelling a job that has ended answers it as it ended; leaving one running reads it once.
  const { data } = cancel ? await command.client.bulkJobs.cancel(job.id) : await command.client.bulkJobs.get(job.id);
  if (data.status === 'running') throw leftRunning;
  if (data.status === 'cancelled') {
    if (command.json) command.logJson(data);
    else command.print(formatJobOutcome(data, command.style.out));
    throw new CliFailure(CliErrorCode.INTERRUPTED, `interrupted: job ${job.id} was cancelled`, ExitCode.INTERRUPTED);
  }
  // Ended meanwhile: the command ends as if it had followed the job to its end.
  command.note(command.style.err.dim(`Job ${terminalText(String(job.id))} ended before ${cancel ? 'it could be cancelled' : 'the answer'}.`));
  return data;
}
