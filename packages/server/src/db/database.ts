import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import postgres from 'postgres';
import { PGlite, type Transaction as PGliteTransaction } from '@electric-sql/pglite';
import { AvailabilityGate, reconnectBackoffSeconds } from './availability.js';
import { PGlitePreparedStatements } from './pglite-prepared.js';

/**
 * One small SQL interface over two backends (docs/architecture.md, Storage): PostgreSQL through
 * `postgres` and PGlite in a data dir. Queries are tagged templates only; values become bind
 * parameters and nested `sql.fragment` templates are inlined, so dynamic filters never concatenate
 * text.
 *
 * Result conventions that hold on both backends: timestamptz → Date, json/jsonb → parsed value,
 * bytea → Uint8Array (a Buffer on PostgreSQL). Cast bigint results (`count(*)::int`) in SQL:
 * the two drivers disagree on int8. Pass json/jsonb parameters as JS values, never pre-stringified:
 * both drivers serialise by the parameter type the server describes, and a string would be stored
 * as a JSON string. Cast caller-given timestamps as `${t}::text::timestamptz`: the postgres driver
 * turns a timestamptz parameter into a Date and drops digits below the millisecond.
 */
export type Row = Record<string, unknown>;

export class SqlFragment {
  constructor(
    readonly strings: readonly string[],
    readonly values: readonly unknown[],
  ) {}
}

export interface Sql {
  <T extends object = Row>(strings: TemplateStringsArray, ...values: unknown[]): Promise<T[]>;
  /** A piece of SQL to embed in another template (`${sql.fragment`AND status = ${s}`}`). */
  fragment(strings: TemplateStringsArray, ...values: unknown[]): SqlFragment;
  /** Joins fragments with a separator (`AND`, `,`), for dynamic filters. */
  join(fragments: readonly SqlFragment[], separator: string): SqlFragment;
  /** Runs `fn` in a transaction; nested calls run inside the enclosing transaction. */
  begin<T>(fn: (tx: Sql) => Promise<T>): Promise<T>;
  /** Runs a multi-statement script with no parameters (migrations only). */
  execScript(script: string): Promise<void>;
}

export type DatabaseBackend = 'postgres' | 'pglite';

export interface Database {
  readonly backend: DatabaseBackend;
  readonly sql: Sql;
  /**
   * Subscribes to a NOTIFY channel; resolves to the unsubscribe function. `onResubscribed` runs each
   * time the subscription is re-established after the listening connection was lost (a database
   * restart): what was notified meanwhile is gone, so the caller catches up by reading its state.
   */
  listen(channel: string, onPayload: (payload: string) => void, onResubscribed?: () => void): Promise<() => Promise<void>>;
  notify(channel: string, payload: string): Promise<void>;
  /**
   * NOTIFYs each payload as a wake-up after a commit: in an autocommit transaction that does not
   * wait for its WAL flush on PostgreSQL (what it announces was committed durably before).
   */
  announce(channel: string, payloads: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

export function fragment(strings: TemplateStringsArray, ...values: unknown[]): SqlFragment {
  return new SqlFragment([...strings], values);
}

export function joinFragments(fragments: readonly SqlFragment[], separator: string): SqlFragment {
  if (fragments.length === 0) return new SqlFragment([''], []);
  const strings: string[] = [];
  const values: unknown[] = [];
  fragments.forEach((f, i) => {
    strings.push(i === 0 ? '' : separator);
    values.push(f);
  });
  strings.push('');
  // strings has one more element than values: ['', sep, sep, ..., '']
  return new SqlFragment(strings, values);
}

/** Turns a template (with nested fragments) into `$n` text and a flat parameter list. */
export function compile(strings: readonly string[], values: readonly unknown[]): { text: string; params: unknown[] } {
  const params: unknown[] = [];
  let text = '';
  const walk = (s: readonly string[], v: readonly unknown[]) => {
    for (let i = 0; i < s.length; i++) {
      text += s[i];
      if (i < v.length) {
        const value = v[i];
        if (value instanceof SqlFragment) {
          walk(value.strings, value.values);
        } else {
          params.push(value === undefined ? null : value);
          text += `$${params.length}`;
        }
      }
    }
  };
  walk(strings, values);
  return { text, params };
}

function makeSql(
  run: (text: string, params: unknown[]) => Promise<Row[]>,
  begin: Sql['begin'],
  execScript: Sql['execScript'],
): Sql {
  const sql = ((strings: TemplateStringsArray, ...values: unknown[]) => {
    const { text, params } = compile(strings, values);
    return run(text, params);
  }) as Sql;
  sql.fragment = fragment;
  sql.join = joinFragments;
  sql.begin = begin;
  sql.execScript = execScript;
  return sql;
}

// ---------- PostgreSQL ----------

export interface PostgresOptions {
  url: string;
  poolSize: number;
  applicationName?: string;
}

/** Where postgres.js should connect: the URL, and the Unix socket when the URL names one. */
export interface PostgresTarget {
  url: string;
  /** The socket file, `<dir>/.s.PGSQL.<port>`. */
  socketPath?: string;
}

/**
 * libpq's connection parameters in the URL's query — `?host=` (a host name, or a Unix-socket
 * directory such as `/run/postgresql`) and `?port=` — and its percent-encoded socket directory as the
 * host (`postgres://%2Frun%2Fpostgresql/db`), as postgres.js takes them. postgres.js reads none of
 * these: it would send `host` and `port` to the server as settings, which refuses the connection, or
 * look up `%2Frun%2Fpostgresql` as a host name.
 */
export function postgresTarget(url: string): PostgresTarget {
  // Anything else (postgres.js's own multi-host `h1:5432,h2:5433`, which URL refuses) goes as it is.
  if (!/[?&](host|port)=/.test(url) && !/^postgres(ql)?:\/\/([^@/?#]*@)?%2F/i.test(url)) return { url };
  let parsed: URL;
  try {
    // `postgres:///db?host=…` and `postgres://user@/db?host=…` have an empty host, which URL refuses.
    parsed = new URL(url.replace(/^(postgres(?:ql)?:\/\/(?:[^@/?#]*@)?)(?=[/?#:]|$)/, '$1localhost'));
  } catch {
    return { url };
  }
  const hostParam = parsed.searchParams.get('host');
  const portParam = parsed.searchParams.get('port');
  const encodedHost = decodeURIComponent(parsed.hostname);
  if (hostParam === null && portParam === null && !encodedHost.startsWith('/')) return { url };
  parsed.searchParams.delete('host');
  parsed.searchParams.delete('port');
  const host = hostParam ?? encodedHost;
  if (portParam !== null) parsed.port = portParam;
  if (!host.startsWith('/')) {
    parsed.hostname = host;
    return { url: parsed.toString() };
  }
  const port = parsed.port === '' ? '5432' : parsed.port;
  parsed.hostname = 'localhost';
  return { url: parsed.toString(), socketPath: `${host.replace(/\/+$/, '')}/.s.PGSQL.${port}` };
}

export function openPostgres(options: PostgresOptions): Database {
  const target = postgresTarget(options.url);
  const client = postgres(target.url, {
    ...(target.socketPath === undefined ? {} : { path: target.socketPath }),
    max: options.poolSize,
    onnotice: () => {},
    connection: { application_name: options.applicationName ?? 'hookrelay' },
    // Fail fast when the database is unreachable so requests answer 503 instead of hanging.
    connect_timeout: 5,
    idle_timeout: 60,
    backoff: reconnectBackoffSeconds,
  });
  // While the database is down, queries fail at once (503) instead of queueing in the driver.
  const gate = new AvailabilityGate();
  type Tx = postgres.TransactionSql | postgres.Sql;
  const wrap = (conn: Tx, inTransaction: boolean): Sql =>
    makeSql(
      async (text, params) => {
        const run = async () => (await conn.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true })) as unknown as Row[];
        return inTransaction ? run() : gate.run(run);
      },
      async <T>(fn: (tx: Sql) => Promise<T>): Promise<T> => {
        if (inTransaction) return fn(wrap(conn, true));
        return gate.run(async () => (await (conn as postgres.Sql).begin((tx) => fn(wrap(tx, true)))) as T);
      },
      async (script) => {
        await conn.unsafe(script).simple();
      },
    );
  const sql = wrap(client, false);
  return {
    backend: 'postgres',
    sql,
    async listen(channel, onPayload, onResubscribed) {
      // The driver re-LISTENs by itself after a reconnect and calls this again each time.
      let subscribed = false;
      const subscription = await client.listen(channel, onPayload, () => {
        if (subscribed) onResubscribed?.();
        subscribed = true;
      });
      return () => subscription.unlisten();
    },
    async notify(channel, payload) {
      await client.notify(channel, payload);
    },
    async announce(channel, payloads) {
      await sql`SELECT set_config('synchronous_commit', 'off', true), pg_notify(${channel}, p) FROM unnest(${payloads}::text[]) AS p`;
    },
    async close() {
      await client.end({ timeout: 5 });
    },
  };
}

// ---------- PGlite ----------

export interface PGliteOpenOptions {
  /** Data directory on disk; undefined → in memory. */
  dataDir?: string;
  /** A data dir saved with `dumpDataDir('gzip')`, to skip initdb (tests). */
  loadDataDir?: Blob;
  /** PostgreSQL settings (`shared_buffers` → `16MB`), as `-c` options after PGlite's own. */
  settings?: Readonly<Record<string, string>>;
}

/** PostgreSQL inside PGlite refused to start, with what it said (a setting it does not know, …). */
export class PGliteStartError extends Error {
  override readonly name = 'PGliteStartError';
}

export async function openPGlite(options: PGliteOpenOptions = {}): Promise<Database & { pglite: PGlite }> {
  if (options.dataDir) await mkdir(path.dirname(options.dataDir), { recursive: true });
  // What PostgreSQL says while it starts (a FATAL about a setting), for the error when it does not.
  let startOutput = '';
  const pglite = new PGlite({
    onStderr: (text) => {
      if (!pglite?.ready) startOutput = `${startOutput}${text}\n`.slice(-4000);
      return false;
    },
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
    // Given start parameters replace PGlite's defaults (single-user mode among them): keep those.
    ...(options.settings && Object.keys(options.settings).length > 0
      ? { startParams: [...PGlite.defaultStartParams, ...Object.entries(options.settings).flatMap(([name, value]) => ['-c', `${name}=${value}`])] }
      : {}),
  });
  try {
    await pglite.waitReady;
  } catch (error) {
    const said = startOutput.split('\n').filter((line) => /\b(FATAL|ERROR|PANIC)\b/.test(line));
    if (said.length === 0) throw error;
    throw new PGliteStartError(`the embedded database (PGlite) did not start: ${said.join('; ')}`, { cause: error });
  }
  return wrapPGlite(pglite);
}

export function wrapPGlite(pglite: PGlite): Database & { pglite: PGlite } {
  const wrapTx = (tx: PGliteTransaction): Sql =>
    makeSql(
      async (text, params) => (await tx.query<Row>(text, params)).rows,
      async (fn) => fn(wrapTx(tx)),
      async (script) => {
        await tx.exec(script);
      },
    );
  const prepared = new PGlitePreparedStatements(pglite);
  const sql = makeSql(
    async (text, params) => prepared.query(text, params),
    async (fn) => pglite.transaction((tx) => fn(wrapTx(tx))),
    async (script) => {
      await pglite.exec(script);
    },
  );
  // One process holds an embedded data dir (its lock), so a NOTIFY of its own reaches only its own
  // listeners: `notify` and `announce` hand the payload to them directly, sparing a statement on
  // PGlite's one thread, which every request of the process waits for. A NOTIFY that SQL sends
  // (a stored function's, in its transaction) still comes through PGlite, so `listen` takes both.
  const local = new Map<string, Set<(payload: string) => void>>();
  const notifyLocally = (channel: string, payload: string): void => {
    for (const onPayload of [...(local.get(channel) ?? [])]) onPayload(payload);
  };
  return {
    backend: 'pglite',
    pglite,
    sql,
    async listen(channel, onPayload) {
      const unsubscribe = await pglite.listen(channel, onPayload);
      let listeners = local.get(channel);
      if (listeners === undefined) local.set(channel, (listeners = new Set()));
      const own = (payload: string) => onPayload(payload);
      listeners.add(own);
      return async () => {
        listeners.delete(own);
        await unsubscribe();
      };
    },
    async notify(channel, payload) {
      notifyLocally(channel, payload);
    },
    async announce(channel, payloads) {
      for (const payload of payloads) notifyLocally(channel, payload);
    },
    async close() {
      if (!pglite.closed) await pglite.close();
    },
  };
}
