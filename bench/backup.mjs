#!/usr/bin/env node
// Online backup of the embedded data dir: three ways to copy a PGlite database that is in use,
// each on a copy of one data dir that a real server filled with --webhooks 1 KiB webhooks, while a
// writer inserts a row every 2 ms. Per way: how long it takes, the longest the writer waited for
// one insert meanwhile (what a request would wait), the process's RSS growth, the archive's size,
// and whether the copy opens and holds every row committed before the backup began.
//   dumpDataDir     PGlite's dumpDataDir('gzip'): a tar of every file, made and compressed in memory
//                   while it holds PGlite's query lock
//   checkpoint+copy CHECKPOINT, then the data dir copied file by file under the query lock, then
//                   compressed (tar -czf) outside it
//   base backup     what `hookrelay-server backup` does: pg_backup_start … pg_backup_stop, the files
//                   read while queries go on, the WAL range and backup_label in the archive
// Then the real thing: `hookrelay-server backup` against a server ingesting at --connections:
// its time, and the ingest's p99 and max latency before and during the backup.
//
//   pnpm bench:backup [--webhooks 5000] [--connections 4] [--runs 3] [--no-build]
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cp, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { build, cleanups, cleanup, delay, fail, fmt, machine, serverDir, startServer, table, usageText, watchdog, createInboundEndpoint } from './lib.mjs';

const { values: args } = parseArgs({
  options: {
    webhooks: { type: 'string', default: '5000' },
    connections: { type: 'string', default: '4' },
    runs: { type: 'string', default: '3' },
    'no-build': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  process.stdout.write(usageText(import.meta.url, 18));
  process.exit(0);
}
const WEBHOOKS = Number(args.webhooks);
const CONNECTIONS = Number(args.connections);
const RUNS = Number(args.runs);
watchdog(1800);
if (!args['no-build']) build(['packages/shared', 'packages/server']);

const { openPGlite } = await import(path.join(serverDir, 'dist/db/database.js'));
const { writeBackup } = await import(path.join(serverDir, 'dist/admin/backup-archive.js'));
const SERVER = path.join(serverDir, 'dist/bin/hookrelay-server.js');
const SETTINGS = { shared_buffers: '16MB', max_connections: '2', autovacuum_worker_slots: '1', max_wal_size: '128MB', min_wal_size: '32MB' };

// One key for the servers on the data dir and on its copies.
const KEY = randomBytes(32).toString('hex');
const API_KEY = `hr_${randomBytes(20).toString('hex')}`;
const work = await mkdtemp(path.join(os.tmpdir(), 'hookrelay-bench-backup-'));
cleanups.push(() => rm(work, { recursive: true, force: true }));

/** Posts `count` webhooks (or until `until()` says stop) at `connections`; each latency in ms, by when it was answered. */
async function ingest(url, token, { count = Infinity, until = () => false, connections = CONNECTIONS } = {}) {
  const answers = [];
  let sent = 0;
  const body = JSON.stringify({ pad: 'x'.repeat(1000) });
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (sent < count && !until()) {
        sent++;
        const started = performance.now();
        const response = await fetch(`${url}/in/${token}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        await response.arrayBuffer();
        if (response.status !== 200) throw new Error(`ingest answered ${response.status}`);
        answers.push({ at: performance.now(), ms: performance.now() - started });
      }
    }),
  );
  return answers;
}

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

// ---------- a data dir with --webhooks messages ----------
const source = path.join(work, 'source');
{
  const server = await startServer({ dataDir: source, env: { HOOKRELAY_ENCRYPTION_KEY: KEY, HOOKRELAY_BOOTSTRAP_API_KEY: API_KEY } });
  const endpoint = await createInboundEndpoint(server.url, API_KEY, 'cli');
  const started = Date.now();
  await ingest(server.url, endpoint.token, { count: WEBHOOKS, connections: 8 });
  process.stdout.write(`filled a data dir with ${fmt(WEBHOOKS)} webhooks of 1 KiB in ${fmt((Date.now() - started) / 1000, 1)} s\n`);
  await server.stop();
}
const du = (dir) => execFileSync('du', ['-sm', dir], { encoding: 'utf8' }).split('\t')[0];
process.stdout.write(`pgdata: ${du(path.join(source, 'pgdata'))} MB\n\n`);

// ---------- three ways, in one process, under a writer ----------
async function withWriter(dir, fn) {
  const db = await openPGlite({ dataDir: path.join(dir, 'pgdata'), settings: SETTINGS });
  await db.pglite.query('CREATE TABLE IF NOT EXISTS bench_rows (id bigserial PRIMARY KEY, pad text)');
  let writing = true;
  let inserted = 0;
  const waits = [];
  const writer = (async () => {
    while (writing) {
      const started = performance.now();
      await db.pglite.query(`INSERT INTO bench_rows (pad) VALUES (repeat('x', 1000))`);
      inserted++;
      waits.push({ at: performance.now(), ms: performance.now() - started });
      await delay(2);
    }
  })();
  await delay(500);
  const committedBefore = inserted;
  const rss = process.memoryUsage().rss;
  const began = performance.now();
  const archive = await fn(db);
  const ms = performance.now() - began;
  const grew = process.memoryUsage().rss - rss;
  writing = false;
  await writer;
  await db.close();
  // Every insert that waited during the backup, also one that it held until after its end.
  const during = waits.filter((w) => w.at >= began && w.at - w.ms <= began + ms).map((w) => w.ms);
  return { ms, maxWait: Math.max(0, ...during), grew, archive, committedBefore };
}

async function restoredRows(pgdataOrBlob) {
  const db = await openPGlite(typeof pgdataOrBlob === 'string' ? { dataDir: pgdataOrBlob, settings: SETTINGS } : { loadDataDir: pgdataOrBlob, settings: SETTINGS });
  try {
    const [row] = (await db.pglite.query('SELECT count(*)::int AS n FROM bench_rows')).rows;
    const [messages] = (await db.pglite.query('SELECT count(*)::int AS n FROM inbound_messages')).rows;
    return { rows: row.n, messages: messages.n };
  } finally {
    await db.close();
  }
}

const ways = {
  async dumpDataDir(dir) {
    let blob;
    const result = await withWriter(dir, async (db) => {
      blob = await db.pglite.dumpDataDir('gzip');
      return blob.size;
    });
    return { ...result, restored: await restoredRows(blob) };
  },
  async 'checkpoint+copy'(dir) {
    const staging = path.join(dir, 'staging');
    const archive = path.join(dir, 'copy.tar.gz');
    const result = await withWriter(dir, async (db) => {
      await db.pglite.query('CHECKPOINT');
      await db.pglite._runExclusiveQuery(() => cp(path.join(dir, 'pgdata'), staging, { recursive: true }));
      await new Promise((resolve, reject) => spawn('tar', ['-czf', archive, '-C', staging, '.']).once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`tar ${code}`)))));
      return (await stat(archive)).size;
    });
    await rm(path.join(staging, 'postmaster.pid'), { force: true });
    return { ...result, restored: await restoredRows(staging) };
  },
  async 'base backup'(dir) {
    const archive = path.join(dir, 'base.tar.gz');
    const result = await withWriter(dir, async (db) => {
      await writeBackup(db, dir, createWriteStream(archive));
      return (await stat(archive)).size;
    });
    const restored = path.join(dir, 'restored');
    await mkdir(restored);
    execFileSync('tar', ['-xzf', archive, '-C', restored]);
    return { ...result, restored: await restoredRows(path.join(restored, 'pgdata')) };
  },
};

const rows = [['way', 'run', 'time ms', 'longest insert ms', 'RSS growth MB', 'archive MB', 'rows before', 'rows restored', 'messages restored']];
for (let run = 1; run <= RUNS; run++) {
  for (const [name, way] of Object.entries(ways)) {
    const dir = path.join(work, `${name.replace(/\W/g, '-')}-${run}`);
    await cp(source, dir, { recursive: true });
    const r = await way(dir);
    if (r.restored.rows < r.committedBefore || r.restored.messages !== WEBHOOKS) await fail(`${name}: the copy lost rows (${JSON.stringify(r)})`);
    rows.push([name, run, fmt(r.ms), fmt(r.maxWait), fmt(r.grew / 1e6), fmt(r.archive / 1e6, 1), fmt(r.committedBefore), fmt(r.restored.rows), fmt(r.restored.messages)]);
    await rm(dir, { recursive: true, force: true });
  }
}
process.stdout.write(table(rows) + '\n');

// ---------- `hookrelay-server backup` against a server under ingest ----------
const live = path.join(work, 'live');
await cp(source, live, { recursive: true });
const server = await startServer({ dataDir: live, env: { HOOKRELAY_ENCRYPTION_KEY: KEY, HOOKRELAY_BOOTSTRAP_API_KEY: API_KEY } });
const endpoint = await createInboundEndpoint(server.url, API_KEY, 'cli');
const liveRows = [['run', 'backup s', 'archive MB', 'ingest p99 before ms', 'max before', 'p99 during', 'max during', 'answered during']];
let stop = false;
const load = ingest(server.url, endpoint.token, { until: () => stop });
await delay(2000);
for (let run = 1; run <= RUNS; run++) {
  const file = path.join(work, `live-${run}.tar.gz`);
  const began = performance.now();
  const code = await new Promise((resolve) => spawn(process.execPath, [SERVER, 'backup', '--to', file, '--data-dir', live], { stdio: 'inherit' }).once('exit', resolve));
  const ended = performance.now();
  if (code !== 0) await fail(`hookrelay-server backup exited ${code}`);
  liveRows.push([run, fmt((ended - began) / 1000, 1), fmt((await stat(file)).size / 1e6, 1), began, ended]);
  await delay(2000);
}
stop = true;
const answers = await load;
for (const row of liveRows.slice(1)) {
  const [began, ended] = row.splice(3, 2);
  const before = answers.filter((a) => a.at < began && a.at >= began - 2000).map((a) => a.ms);
  const during = answers.filter((a) => a.at >= began && a.at <= ended).map((a) => a.ms);
  row.push(fmt(percentile(before, 99)), fmt(Math.max(...before)), fmt(percentile(during, 99)), fmt(Math.max(...during)), fmt(during.length));
}
await server.stop();
process.stdout.write(table(liveRows));
process.stdout.write(`\n${JSON.stringify(machine())}\n`);
await cleanup();
