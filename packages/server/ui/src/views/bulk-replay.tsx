import { useEffect, useState } from 'preact/hooks';
import type { BulkJobEstimateOut, BulkJobOut, InboundReplayCreateIn } from '@hookrelay/shared';
import { api } from '../api.js';
import { ErrorBox } from '../components.js';
import { localTimeToIso } from '../format.js';

/** How often a running job is read. */
const JOB_POLL_MS = 1000;

/** The list's filters as the inbound list view holds them (local times from the form). */
export interface ListFilters {
  q: string;
  event_type: string;
  answer: string;
  received_after: string;
  received_before: string;
}

/**
 * The replay job that takes what the list shows, or why there is none: a job takes a window from a
 * start, with an exact event type, and neither the answer class nor the search text.
 */
export function replayFilter(filters: ListFilters): { filter: Omit<InboundReplayCreateIn, 'dry_run'> } | { reason: string } {
  if (filters.q !== '' || filters.answer !== '') return { reason: 'A replay job takes the time window and an exact event type, not the search text or the answer: clear them to replay.' };
  if (filters.event_type.includes('*')) return { reason: 'A replay job takes an exact event type, not a pattern.' };
  const from = localTimeToIso(filters.received_after);
  if (from === undefined) return { reason: 'Set From (and Apply) to replay these: a replay job takes the messages of a time window.' };
  const to = localTimeToIso(filters.received_before);
  return { filter: { received_after: from, ...(to === undefined ? {} : { received_before: to }), ...(filters.event_type === '' ? {} : { event_type: filters.event_type }) } };
}

const settled = (job: BulkJobOut) => job.done + job.skipped + job.failed;

/** A job while it runs and once it ended: a progress bar of what is settled, its counts, and Cancel while it runs. */
function JobProgress({ started }: { started: BulkJobOut }) {
  const [job, setJob] = useState(started);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    if (job.status !== 'running') return;
    const timer = setTimeout(() => {
      api<BulkJobOut>('GET', `/v1/bulk-retries/${job.id}`).then(
        (r) => setJob(r.data),
        (caught: unknown) => (setError(caught), setJob({ ...job })),
      );
    }, JOB_POLL_MS);
    return () => clearTimeout(timer);
  }, [job]);
  const cancel = async () => {
    try {
      setJob((await api<BulkJobOut>('POST', `/v1/bulk-retries/${job.id}/cancel`)).data);
    } catch (caught) {
      setError(caught);
    }
  };
  const extra = [job.skipped > 0 ? `${job.skipped} skipped (deleted meanwhile)` : '', job.failed > 0 ? `${job.failed} failed` : ''].filter(Boolean).join(', ');
  return (
    <div class="row wrap" data-testid="replay-job" data-status={job.status}>
      <progress max={Math.max(1, job.matched)} value={job.matched === 0 ? 1 : settled(job)} aria-label="Replayed so far" />
      <span role="status">
        Job <code>{job.id}</code> {job.status}: {job.done} of {job.matched} replayed{extra ? `, ${extra}` : ''}
      </span>
      {job.status === 'running' ? (
        <button type="button" class="small danger" onClick={cancel}>
          Cancel the job
        </button>
      ) : null}
      {job.last_error ? <span class="error">{job.last_error}</span> : null}
      <ErrorBox error={error} />
    </div>
  );
}

/**
 * "Replay these": the estimate of a replay job of the list's current filter (a dry run), then, once
 * confirmed, the job and its progress. Messages go again oldest first, to the forward URL or to the
 * listeners connected now.
 */
export function ReplayThese({ endpointId, filters, mode }: { endpointId: string; filters: ListFilters; mode: 'cli' | 'forward' | undefined }) {
  const [estimate, setEstimate] = useState<{ matched: number; filter: Omit<InboundReplayCreateIn, 'dry_run'> } | null>(null);
  const [job, setJob] = useState<BulkJobOut | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const chosen = replayFilter(filters);
  const key = JSON.stringify(filters);
  // Another filter is another set: its estimate is asked again.
  useEffect(() => setEstimate(null), [key]);
  const path = `/v1/inbound-endpoints/${endpointId}/replays`;
  const run = async (step: () => Promise<void>) => {
    setError(undefined);
    setBusy(true);
    try {
      await step();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  const count = () =>
    run(async () => {
      if (!('filter' in chosen)) return;
      const { data } = await api<BulkJobEstimateOut>('POST', path, { body: { ...chosen.filter, dry_run: true } });
      setJob(null);
      setEstimate({ matched: data.matched, filter: chosen.filter });
    });
  const start = () =>
    run(async () => {
      if (estimate === null) return;
      const { data } = await api<BulkJobOut>('POST', path, { body: estimate.filter });
      setEstimate(null);
      setJob(data);
    });
  const target = mode === 'forward' ? 'to the forward URL' : 'to the listeners connected now';
  return (
    <section class="bulk-replay" aria-label="Replay these">
      <div class="row wrap">
        <button type="button" onClick={count} disabled={busy || !('filter' in chosen)}>
          Replay these…
        </button>
        {'reason' in chosen ? <span class="muted">{chosen.reason}</span> : null}
        {estimate !== null ? (
          <span role="status" data-testid="replay-estimate">
            {estimate.matched === 0 ? 'No message matches: nothing to replay.' : `${estimate.matched} message${estimate.matched === 1 ? '' : 's'} match, to replay ${target}, oldest first.`}
          </span>
        ) : null}
        {estimate !== null && estimate.matched > 0 ? (
          <>
            <button type="button" onClick={start} disabled={busy}>
              Replay {estimate.matched} message{estimate.matched === 1 ? '' : 's'}
            </button>
            <button type="button" onClick={() => setEstimate(null)}>
              Cancel
            </button>
          </>
        ) : null}
      </div>
      {job !== null ? <JobProgress key={job.id} started={job} /> : null}
      <ErrorBox error={error} />
    </section>
  );
}
