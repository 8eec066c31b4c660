#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { SERVER_VERSION } from './version.js';
import { saveCodeCache } from './code-cache.js';
import { configVariables, parseConfig, processEnvironment, type Config, type ConfigVariable } from './config.js';
import { ConfigError } from './errors.js';
import type { Database } from './db/database.js';
import { migrate, type MigrateResult } from './db/migrate.js';
import { checkPayloadStoreAvailable } from './storage/open-payload-store.js';
import { checkTracingAvailable } from './tracing/tracing.js';
import type { PrepareDataDirResult } from './db/pglite-template.js';
import { DataDirLockedError, loadEncryptionKeys, openDatabase, persistGeneratedKey } from './runtime.js';
import { recordEncryptionKeys, secretBoxOf, verifyEncryptionKeys } from './security/key-check.js';
import { deleteProtoAccessor } from './security/prototype.js';
import { riskySettings } from './security/warnings.js';
import { flushLogs, writeStdoutLine } from './logging.js';
import {
  AdminError,
  createKeyCommand,
  createProjectCommand,
  listKeysCommand,
  listProjectsCommand,
  migrateCommand,
  revokeKeyCommand,
  type AdminOutput,
} from './admin/commands.js';
import { rotateEncryptionKeyCommand } from './admin/encryption-key.js';
import { backupCommand, restoreCommand } from './admin/backup.js';
import { listenBackupSocket, type BackupSocket } from './admin/backup-socket.js';
import { DEFAULT_ROTATION_GRACE, deleteProjectCommand, renameProjectCommand, rotateKeyCommand } from './admin/manage.js';

/** Each configuration variable that has a flag, by flag: a flag wins over its variable. */
const CONFIG_FLAGS: ReadonlyMap<string, ConfigVariable> = new Map(
  configVariables().flatMap((variable) => (variable.flag === undefined ? [] : [[variable.flag, variable] as const])),
);

const COMMANDS = `hookrelay-server — webhook relay server

Usage:
  hookrelay-server start [flags]                 run the API, ingestion, workers and sweepers
  hookrelay-server migrate [flags] [--json]      apply pending database migrations, say which ran, and exit
  hookrelay-server projects create --name NAME   create a project
  hookrelay-server projects list
  hookrelay-server projects rename ID --name NAME
  hookrelay-server projects delete ID --force    delete its endpoints, revoke its keys, free its name
  hookrelay-server keys create --project ID [--name NAME]   create an API key (shown once)
  hookrelay-server keys list [--project ID]
  hookrelay-server keys rotate ID [--grace 24h]  a new key in its place (shown once); the old one works
                                                 for the grace period (0 = revoked now, at most 30d)
  hookrelay-server keys revoke ID
  hookrelay-server encryption rotate-key         seal every stored secret again under the current key
                                                 (embedded: under a new key it writes to the data dir)
  hookrelay-server backup --to FILE              embedded: a consistent copy of the data dir, taken by
                                                 the running server (or by this command if none runs)
  hookrelay-server restore --from FILE --data-dir DIR   embedded: unpack a backup into a new data dir
  hookrelay-server --version                     print the version

Other flags:
  --json                       admin commands and migrate: print JSON (a failure: one JSON line on stderr)
Exit codes of the admin commands: 0 done, 1 failed, 2 bad flags or configuration, 4 no such project
or key, 5 name already taken.
`;

const EXAMPLES = `Examples:
  hookrelay-server start
  HOOKRELAY_PORT=0 hookrelay-server start --data-dir /tmp/hr
  # PostgreSQL: make the encryption key once and keep it; every start and every process reads the same one
  (umask 077 && openssl rand -hex 32 > /etc/hookrelay/encryption-key)
  DATABASE_URL=postgres://localhost/hookrelay HOOKRELAY_ENCRYPTION_KEY=$(cat /etc/hookrelay/encryption-key) hookrelay-server start --data-dir /var/lib/hookrelay
  hookrelay-server migrate --json
`;

/** The help text: the commands, then every configuration variable from the schema (config.ts). */
function helpText(): string {
  const settings = configVariables().map((variable) => {
    const flag = variable.flag === undefined ? '(environment only)' : `--${variable.flag}${variable.boolean ? '' : ' <value>'}`;
    const def = variable.default === undefined ? '' : ` (default: ${variable.default})`;
    return `  ${variable.name.padEnd(36)} ${flag}\n      ${variable.description}${def}\n`;
  });
  return `${COMMANDS}
Settings (environment variables; the flag beside each wins over it):
${settings.join('')}
${EXAMPLES}`;
}

/**
 * The modules of a running server (Fastify, the routes and the engines), loaded while the database
 * opens: PGlite reads and compiles its WebAssembly meanwhile, off the main thread.
 */
async function serverModules() {
  const [app, bootstrap] = await Promise.all([import('./app.js'), import('./bootstrap.js')]);
  return { ...app, ...bootstrap };
}

/**
 * How long after its listening line a server on the embedded database starts its sweepers and
 * delivery worker: longer than a CLI takes to read its endpoint and connect its stream.
 */
const EMBEDDED_BACKGROUND_DELAY_MS = 500;

/** How long an exiting server waits for its last log lines to reach stdout. */
const LOG_FLUSH_AT_EXIT_MS = 1000;

/** How long a start told to stop may take to reach its next step before the process just exits. */
const STOP_DURING_START_TIMEOUT_MS = 10_000;

/** The start was told to stop (SIGTERM, SIGINT) before its listening line: it ends at its next step. */
class StopDuringStart extends Error {}

async function runStart(config: Config): Promise<void> {
  // A stop signal before the listening line (a `hookrelay dev` that gave up, Ctrl-C) ends the start
  // at its next step, with the database closed and the data dir's lock released, rather than
  // killing the process in the middle of opening the database. A second signal, or a step that takes
  // longer than the timeout, exits at once.
  let stopSignal: NodeJS.Signals | undefined;
  let forceExit: NodeJS.Timeout | undefined;
  const onStopDuringStart = (signal: NodeJS.Signals): void => {
    if (stopSignal !== undefined) process.exit(1);
    stopSignal = signal;
    forceExit = setTimeout(() => process.exit(1), STOP_DURING_START_TIMEOUT_MS).unref();
  };
  process.on('SIGTERM', onStopDuringStart);
  process.on('SIGINT', onStopDuringStart);
  const checkStop = (): void => {
    if (stopSignal !== undefined) throw new StopDuringStart();
  };
  try {
    await startServer(config, checkStop, () => {
      process.off('SIGTERM', onStopDuringStart);
      process.off('SIGINT', onStopDuringStart);
      // The running server's shutdown has a timeout of its own.
      clearTimeout(forceExit);
      return stopSignal;
    });
  } catch (error) {
    if (!(error instanceof StopDuringStart)) throw error;
    process.stderr.write(`hookrelay-server: stopped by ${stopSignal} before listening\n`);
    await flushLogs(LOG_FLUSH_AT_EXIT_MS);
    process.exit(0);
  }
}

/**
 * Opens the database, builds the app and listens; `checkStop` throws between the steps when a stop
 * was requested. `onListening` hands the stop signals over to the running server's shutdown, and
 * answers a signal that came while it listened.
 */
async function startServer(config: Config, checkStop: () => void, onListening: () => NodeJS.Signals | undefined): Promise<void> {
  // Before the database: every configuration check that can refuse the start (a missing or
  // malformed key, a payload store or tracing whose packages are not installed) runs before the
  // start changes anything.
  await checkPayloadStoreAvailable(config.payloadStore);
  await checkTracingAvailable(config.tracing);
  const keys = await loadEncryptionKeys(config);
  const secretBox = secretBoxOf(keys);
  const modules = serverModules();
  modules.catch(() => {}); // awaited below; a failure to load is reported there
  let prepared: PrepareDataDirResult | undefined;
  const db = await openDatabase(config, undefined, (result) => (prepared = result));
  let closing = false;
  // Closed with the database when the start fails after building it.
  let builtApp: { close(): Promise<unknown> } | undefined;
  let backupSocket: BackupSocket | undefined;
  try {
    checkStop();
    const { buildApp, bootstrapProject, listenIngestOnly } = await modules;
    // Before the migrations and anything else that writes: keys that do not open the stored secrets
    // stop the start here, and leave the database and the data dir as they were.
    const keyCheck = await verifyEncryptionKeys(db.sql, keys);
    const migrated = await migrate(db);
    await persistGeneratedKey(config, keys);
    const { sealedWith } = await recordEncryptionKeys(db.sql, keys, keyCheck);
    checkStop();
    const boot = await bootstrapProject(db, config);
    if (boot.generatedKey) {
      // At once: the key is committed, and a start that fails after this point must not take it
      // along. Plain stdout, never the JSON log, which must hold no secret (docs/operating.md, Logs).
      const where =
        boot.keyFile !== undefined
          ? `also written to ${boot.keyFile}`
          : boot.keyFileError !== undefined
            ? `it could not be written to ${boot.keyFileError}: store it now`
            : 'not written to a file, as no data dir is set: store it now';
      writeStdoutLine(`hookrelay-server bootstrap API key (shown once; ${where}): ${boot.generatedKey}`);
    }
    const app = await buildApp(config, { db, secretBox });
    builtApp = app;
    checkStop();
    if (prepared?.origin === 'initdb') app.log.warn({ reason: prepared.reason }, 'new embedded database made by initdb, not from the template');
    else if (prepared) app.log.info({ origin: prepared.origin }, 'embedded database opened');
    for (const risky of riskySettings(config)) app.log.warn({ setting: risky.setting }, risky.allows);
    if (migrated.migrations.length > 0 || migrated.currentSql.length > 0) {
      app.log.info({ migrations: migrated.migrations, current_sql: migrated.currentSql }, 'applied database migrations');
    }
    if (migrated.superseded.length > 0) {
      // A process of a newer version started before this one (a rolling upgrade): its bodies stay.
      app.log.warn({ functions: migrated.superseded }, 'the database runs newer bodies of these functions than this version ships; they are kept');
    }
    if (sealedWith === 'previous') {
      app.log.warn(`the stored secrets are sealed under ${keys.previousName}: run \`hookrelay-server encryption rotate-key\` to seal them under the current key`);
    }
    checkStop();
    // Before the listening line: a backup asked for once the server listens finds the socket.
    if (config.databaseUrl === undefined) backupSocket = await listenBackupSocket(config.dataDir, db, app.log);
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    // Before the main listener: its line is the one a supervisor waits for, and by then both answer.
    if (config.ingestPort !== undefined) {
      const ingestPort = await listenIngestOnly(app, config.host, config.ingestPort);
      writeStdoutLine(`hookrelay-server ingest-only listening on http://${host}:${ingestPort}`);
    }
    await app.listen({ host: config.host, port: config.port });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    writeStdoutLine(`hookrelay-server listening on http://${host}:${port}`);

    // The embedded database runs every query on one connection: the sweepers' and the worker's first
    // round (first queries, on cold catalogs) would queue ahead of the first requests, such as the
    // CLI of `hookrelay dev` reading its endpoint and opening its stream. PostgreSQL has a pool.
    // Either way they start from a timer, after the stop-signal handlers below are in place.
    const backgroundDelayMs = config.databaseUrl === undefined ? EMBEDDED_BACKGROUND_DELAY_MS : 0;
    let background: Promise<void> = Promise.resolve();
    let backgroundTimer: NodeJS.Timeout | undefined = setTimeout(() => {
      backgroundTimer = undefined;
      background = app.engines.startBackground().catch((error: unknown) => {
        app.log.error({ err: error }, 'the delivery worker could not start');
        void shutdown('worker start failure', 1);
      });
    }, backgroundDelayMs);
    // A second after the background work started: the cache then also holds the worker's and the
    // sweepers' first round, and writing it (a few tens of ms) does not hold up the first requests.
    setTimeout(saveCodeCache, backgroundDelayMs + 1000).unref();

    const shutdown = async (reason: string, exitCode = 0) => {
      if (closing) return;
      closing = true;
      app.log.info({ reason }, 'shutting down');
      const force = setTimeout(() => process.exit(1), 30_000);
      force.unref();
      try {
        if (backgroundTimer !== undefined) clearTimeout(backgroundTimer);
        await backupSocket?.close();
        await background;
        // The app's close stops its engines in order (see Engines.close); the database goes last.
        await app.close();
        await db.close();
      } finally {
        clearTimeout(force);
      }
      // The last lines go out if stdout takes them; a stdout nobody reads does not hold the exit.
      await flushLogs(LOG_FLUSH_AT_EXIT_MS);
      process.exit(exitCode);
    };
    process.once('SIGTERM', () => void shutdown('SIGTERM'));
    process.once('SIGINT', () => void shutdown('SIGINT'));
    const pending = onListening();
    if (pending !== undefined) void shutdown(pending);
  } catch (error) {
    await backupSocket?.close().catch(() => {});
    await builtApp?.close().catch(() => {});
    await db.close().catch(() => {});
    throw error;
  }
}

async function withDatabase(config: Config, holder: string, fn: (db: Database, migrated: MigrateResult) => Promise<void>): Promise<void> {
  const db = await openDatabase(config, holder);
  try {
    const migrated = await migrate(db);
    await fn(db, migrated);
  } finally {
    await db.close();
  }
}

async function main(argv: string[], env: Readonly<Record<string, string | undefined>>): Promise<number> {
  const options = Object.fromEntries([...CONFIG_FLAGS].map(([flag, variable]) => [flag, { type: variable.boolean ? ('boolean' as const) : ('string' as const) }]));
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      ...options,
      name: { type: 'string' },
      project: { type: 'string' },
      to: { type: 'string' },
      from: { type: 'string' },
      grace: { type: 'string' },
      force: { type: 'boolean' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'v' },
    },
  });
  if (values.version) {
    process.stdout.write(`${SERVER_VERSION}\n`);
    return 0;
  }
  const [command, sub, arg] = positionals;
  if (values.help || command === undefined || command === 'help') {
    process.stdout.write(helpText());
    return command === undefined && !values.help ? 2 : 0;
  }
  const flagEnv: Record<string, string> = {};
  for (const [flag, variable] of CONFIG_FLAGS) {
    const value = (values as Record<string, unknown>)[flag];
    if (value !== undefined) flagEnv[variable.name] = String(value);
  }
  const config = parseConfig({ ...env, ...flagEnv });
  const out: AdminOutput = { json: values.json === true, write: (text) => process.stdout.write(text) };
  const holder = `hookrelay-server ${command}`;

  switch (`${command} ${sub ?? ''}`.trim()) {
    case 'start':
      await runStart(config);
      return -1; // keeps running until a signal
    case 'migrate':
      await withDatabase(config, holder, async (_db, migrated) => migrateCommand(out, migrated));
      return 0;
    case 'projects create':
      if (!values.name) throw new AdminError('projects create needs --name NAME', 'INVALID_ARGUMENTS');
      await withDatabase(config, holder, (db) => createProjectCommand(db, out, values.name!));
      return 0;
    case 'projects list':
      await withDatabase(config, holder, (db) => listProjectsCommand(db, out));
      return 0;
    case 'keys create':
      if (!values.project) throw new AdminError('keys create needs --project ID (see: hookrelay-server projects list)', 'INVALID_ARGUMENTS');
      await withDatabase(config, holder, (db) => createKeyCommand(db, out, values.project!, values.name ?? ''));
      return 0;
    case 'keys list':
      await withDatabase(config, holder, (db) => listKeysCommand(db, out, values.project));
      return 0;
    case 'encryption rotate-key':
      await rotateEncryptionKeyCommand(config, out, holder);
      return 0;
    case 'keys rotate':
      if (!arg) throw new AdminError('keys rotate needs the key id: hookrelay-server keys rotate ID [--grace 24h]', 'INVALID_ARGUMENTS');
      await withDatabase(config, holder, (db) => rotateKeyCommand(db, out, arg, values.grace ?? DEFAULT_ROTATION_GRACE));
      return 0;
    case 'projects rename':
      if (!arg || values.name === undefined) throw new AdminError('projects rename needs the project id and --name: hookrelay-server projects rename ID --name NAME', 'INVALID_ARGUMENTS');
      await withDatabase(config, holder, (db) => renameProjectCommand(db, out, arg, values.name!));
      return 0;
    case 'projects delete':
      if (!arg) throw new AdminError('projects delete needs the project id: hookrelay-server projects delete ID --force', 'INVALID_ARGUMENTS');
      await withDatabase(config, holder, (db) => deleteProjectCommand(db, out, arg, values.force === true));
      return 0;
    case 'keys revoke':
      if (!arg) throw new AdminError('keys revoke needs the key id: hookrelay-server keys revoke ID', 'INVALID_ARGUMENTS');
      await withDatabase(config, holder, (db) => revokeKeyCommand(db, out, arg));
      return 0;
    case 'backup':
      if (!values.to) throw new AdminError('backup needs --to FILE: hookrelay-server backup --to FILE', 'INVALID_ARGUMENTS');
      await backupCommand(config, out, values.to);
      return 0;
    case 'restore':
      if (!values.from) throw new AdminError('restore needs --from FILE: hookrelay-server restore --from FILE --data-dir DIR', 'INVALID_ARGUMENTS');
      await restoreCommand(config, out, values.from);
      return 0;
    default:
      if (values.json) throw new AdminError(`unknown command: ${positionals.join(' ')} (see hookrelay-server --help)`, 'INVALID_ARGUMENTS');
      process.stderr.write(`unknown command: ${positionals.join(' ')}\n\n${helpText()}`);
      return 2;
  }
}

/**
 * A failure as the CLI reports one: `--json` makes it one JSON line on stderr,
 * `{"error":{"code","message","request_id":null,"status":null}}`; otherwise a line of text.
 */
function fail(json: boolean, code: string, message: string, exitCode: number): never {
  process.stderr.write(json ? `${JSON.stringify({ error: { code, message, request_id: null, status: null } })}\n` : `hookrelay-server: ${message}\n`);
  process.exit(exitCode);
}

deleteProtoAccessor();
const argv = process.argv.slice(2);
const json = argv.includes('--json');
main(argv, processEnvironment()).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    if (error instanceof AdminError) fail(json, error.code, error.message, error.exitCode);
    if (error instanceof ConfigError) fail(json, 'CONFIG_ERROR', error.message, 2);
    if (error instanceof DataDirLockedError) fail(json, 'DATA_DIR_IN_USE', error.message, 1);
    if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      fail(json, 'INVALID_ARGUMENTS', json ? (error as Error).message : `${(error as Error).message}\n(see hookrelay-server --help)`, 2);
    }
    fail(json, 'INTERNAL_ERROR', json ? String((error as Error).message ?? error) : ((error as Error).stack ?? String(error)), 1);
  },
);
