// Optional instrumentation for bench/ingest.mjs --batch-stats, preloaded into the server process
// with `--import`. It changes no server code: it wraps IngestBatcher.prototype.store (one call per
// group commit) to count the webhooks each commit carries and the time its statement takes (the
// commit included), and samples the event loop (utilisation, delay). It writes the
// figures to $HOOKRELAY_BENCH_BATCH_STATS on SIGUSR2 and resets them.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const out = process.env.HOOKRELAY_BENCH_BATCH_STATS;
const serverDir = path.dirname(createRequire(import.meta.url).resolve('@hookrelay/server/package.json'));
const { IngestBatcher } = await import(pathToFileURL(path.join(serverDir, 'dist/ingest/batcher.js')).href);

/** @type {{ transactions: number, messages: number, storeMs: number, txMs: number, sizes: Record<string, number>, statements: Record<string, { n: number, ms: number }> }} */
let stats;
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();
let elu = performance.eventLoopUtilization();
const reset = () => {
  stats = { transactions: 0, messages: 0, storeMs: 0, txMs: 0, sizes: {}, statements: {} };
  loopDelay.reset();
  elu = performance.eventLoopUtilization();
};
reset();

/** The batcher's SQL handle, with each statement timed under its first words. */
function timedSql(sql) {
  const timed = (strings, ...values) => {
    const label = strings[0].trim().split(/\s+/).slice(0, 3).join(' ');
    const t0 = performance.now();
    return sql(strings, ...values).finally(() => {
      const ms = performance.now() - t0;
      const entry = (stats.statements[label] ??= { n: 0, ms: 0 });
      entry.n += 1;
      entry.ms += ms;
      // One batch is one statement (one autocommit round trip, its commit included); the NOTIFY
      // sent after it is not part of the batch.
      if (!label.startsWith('SELECT set_config(')) stats.txMs += ms;
    });
  };
  return Object.assign(timed, { fragment: sql.fragment, join: sql.join, begin: sql.begin, execScript: sql.execScript });
}

const store = IngestBatcher.prototype.store;
IngestBatcher.prototype.store = async function (items) {
  const started = performance.now();
  if (!this.__benchWrapped) {
    this.__benchWrapped = true;
    // The batcher reaches the database through this.db.sql: give it a timed handle of its own.
    this.db = { ...this.db, sql: timedSql(this.db.sql) };
  }
  try {
    return await store.call(this, items);
  } finally {
    stats.storeMs += performance.now() - started;
    stats.transactions += 1;
    stats.messages += items.length;
    stats.sizes[items.length] = (stats.sizes[items.length] ?? 0) + 1;
  }
};

process.on('SIGUSR2', () => {
  const used = performance.eventLoopUtilization(elu);
  const loop = { utilization: used.utilization, delayP50Ms: Math.max(0, loopDelay.percentile(50) / 1e6 - 10), delayP99Ms: Math.max(0, loopDelay.percentile(99) / 1e6 - 10) };
  if (out) writeFileSync(out, JSON.stringify({ ...stats, loop }));
  reset();
});
