import type { BulkJobOut } from '@hookrelay/shared';
import { formatKeyValues } from './key-value.js';
import type { Style } from './style.js';
import { formatTable } from './table.js';
import { terminalSafe, terminalText, truncate } from './text.js';
import { formatTimestamp } from './time.js';

const FILTER_COLUMN_MAX = 60;
const BAR_WIDTH = 24;

/** 1234 → "1,234"; escaped, since a count is the server's word (a server that is not hookrelay may send text). */
function formatCount(count: number): string {
  return terminalText(String(count.toLocaleString('en-US')));
}

export function messageCount(count: number): string {
  return `${formatCount(count)} ${count === 1 ? 'message' : 'messages'}`;
}

/** What a job does, in a word or two. */
function jobKindLabel(job: Pick<BulkJobOut, 'kind'>): string {
  return job.kind === 'outbound' ? 'outbound retry' : 'inbound replay';
}

/** The messages a job settled: retried, skipped or failed. */
export const settledCount = (job: Pick<BulkJobOut, 'done' | 'skipped' | 'failed'>): number => job.done + job.skipped + job.failed;

function formatJobStatus(status: string, style: Style): string {
  status = terminalText(status);
  if (status === 'done') return style.green(status);
  if (status === 'cancelled') return style.yellow(status);
  return style.cyan(status);
}

/** "failed_permanent, endpoint ep_…, created 2026-…Z to the job's start": what a job takes, in a line. */
function describeFilter(job: Pick<BulkJobOut, 'kind' | 'filter'>): string {
  const parts: string[] = [];
  const until = (before: string | null) => (before === null ? 'when the job started' : before);
  if (job.kind === 'outbound') {
    const f = job.filter as Extract<BulkJobOut, { kind: 'outbound' }>['filter'];
    parts.push(f.status.join('|'));
    if (f.endpoint_id !== null) parts.push(`endpoint ${f.endpoint_id}`);
    if (f.owner_id !== null) parts.push(`owner ${f.owner_id}`);
    if (f.event_type !== null) parts.push(`type ${f.event_type}`);
    parts.push(`created ${f.created_after} to ${until(f.created_before)}`);
  } else {
    const f = job.filter as Extract<BulkJobOut, { kind: 'inbound' }>['filter'];
    parts.push(f.status === null ? 'any status' : f.status.join('|'));
    parts.push(`endpoint ${f.inbound_endpoint_id}`);
    if (f.event_type !== null) parts.push(`type ${f.event_type}`);
    parts.push(`received ${f.received_after} to ${until(f.received_before)}`);
  }
  return parts.join(', ');
}

/** The estimate a command prints before it starts a job. */
export function formatEstimate(matched: number, verb: 'retry' | 'replay', style: Style): string {
  if (matched === 0) return `No messages match: nothing to ${verb}.`;
  return `${style.bold(messageCount(matched))} match, to ${verb}.`;
}

/** One job: what it takes, how far it got, when. */
export function formatBulkJob(job: BulkJobOut, style: Style, now: Date): string {
  job = terminalSafe(job);
  return formatKeyValues(
    [
      ['ID', style.bold(job.id)],
      ['Kind', jobKindLabel(job)],
      ['Status', formatJobStatus(job.status, style)],
      ['Filter', describeFilter(job)],
      ['Matched', formatCount(job.matched)],
      ['Done', formatCount(job.done)],
      ['Skipped', job.skipped === 0 ? '0' : `${formatCount(job.skipped)} (deleted meanwhile)`],
      ['Failed', job.failed === 0 ? '0' : style.red(formatCount(job.failed))],
      ['Last error', job.last_error ?? undefined],
      ['Created', formatTimestamp(job.created_at, now)],
      ['Finished', job.finished_at === null ? undefined : formatTimestamp(job.finished_at, now)],
    ],
    style,
  );
}

/** The line a command ends with once its job has ended. */
export function formatJobOutcome(job: BulkJobOut, style: Style): string {
  job = terminalSafe(job);
  const verb = job.kind === 'outbound' ? 'retried' : 'replayed';
  const counts = [`${formatCount(job.done)} of ${formatCount(job.matched)} ${verb}`];
  if (job.skipped > 0) counts.push(`${formatCount(job.skipped)} skipped (deleted meanwhile)`);
  if (job.failed > 0) counts.push(style.red(`${formatCount(job.failed)} failed`));
  const head = `Job ${style.bold(job.id)} ${formatJobStatus(job.status, style)}: ${counts.join(', ')}`;
  return job.failed > 0 && job.last_error !== null ? `${head}\n${style.dim(`Last error: ${job.last_error}`)}` : head;
}

/** Jobs as a table, newest first. */
export function formatBulkJobTable(jobs: readonly BulkJobOut[], style: Style): string {
  jobs = terminalSafe(jobs);
  return formatTable<BulkJobOut>(
    [
      { header: 'CREATED', value: (j) => j.created_at },
      { header: 'JOB', value: (j) => j.id },
      { header: 'KIND', value: (j) => jobKindLabel(j) },
      { header: 'STATUS', value: (j) => j.status, color: (text, _j, s) => formatJobStatus(text, s) },
      { header: 'DONE', value: (j) => `${formatCount(j.done)}/${formatCount(j.matched)}` },
      { header: 'FAILED', value: (j) => formatCount(j.failed) },
      { header: 'FILTER', value: (j) => truncate(describeFilter(j), FILTER_COLUMN_MAX) },
    ],
    jobs,
    style,
  );
}

/** "12s", "4m 10s", "1h 05m". */
function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** "250/s"; below ten a second, with its tenths ("0.8/s"), so that a slow job does not read as stopped. */
function formatRate(perSecond: number): string {
  if (perSecond >= 10) return `${formatCount(Math.round(perSecond))}/s`;
  if (perSecond < 0.05) return '< 0.1/s';
  return `${Math.round(perSecond * 10) / 10}/s`;
}

/**
 * A running job's progress line: a bar of what is settled, the counts, the rate and the time left
 * (`…` while too little has been seen to tell). Redrawn in place, it must fit on one line of the
 * terminal (a wrapped line is not cleared by the next draw): wider than `maxWidth`, it loses the
 * bar, then its end.
 */
export function formatProgress(job: BulkJobOut, rate: { perSecond: number; etaSeconds: number } | null, style: Style, maxWidth = Infinity): string {
  const settled = settledCount(job);
  const fraction = job.matched === 0 ? 1 : Math.min(1, settled / job.matched);
  const filled = Math.round(fraction * BAR_WIDTH);
  const counts = `${formatCount(job.done)} / ${formatCount(job.matched)}`;
  const extra = job.skipped + job.failed > 0 ? ` (${formatCount(job.skipped)} skipped, ${formatCount(job.failed)} failed)` : '';
  const pace = rate === null ? 'rate …, ETA …' : `${formatRate(rate.perSecond)}, ETA ${formatDuration(rate.etaSeconds)}`;
  const rest = `${counts}${extra}  ${Math.floor(fraction * 100)}%  ${pace}`;
  if (BAR_WIDTH + 3 + rest.length > maxWidth) return truncate(rest, maxWidth);
  return `[${'#'.repeat(filled)}${style.dim('.'.repeat(BAR_WIDTH - filled))}] ${rest}`;
}
