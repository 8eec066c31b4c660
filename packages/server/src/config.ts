import path from 'node:path';
import { z } from 'zod';
import { API_KEY_PATTERN, emptyRecord, MAX_INGEST_BODY_BYTES_CEILING } from '@hookrelay/shared';
import { ConfigError } from './errors.js';
import { parseCidr } from './security/cidr.js';
import { parseFrameAncestor } from './security/frame-ancestors.js';
import { isHttpUrl, tracingOf, type TracingConfig } from './config-tracing.js';

/**
 * Server configuration, parsed once from an injected environment. Command-line
 * flags are turned into the same variables by main.ts and win over the environment.
 */
export const ROLES = ['api', 'ingest', 'worker'] as const;
export type Role = (typeof ROLES)[number];

const booleanFromEnv = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', ''], { message: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const positiveInt = (name: string) =>
  z.coerce.number({ message: `${name} must be an integer` }).int(`${name} must be an integer`).positive(`${name} must be positive`);

const nonNegativeInt = (name: string) =>
  z.coerce.number({ message: `${name} must be an integer` }).int(`${name} must be an integer`).min(0, `${name} must be 0 or more`);

/** An empty variable counts as unset (its default), not as 0. */
const unsetWhenEmpty = <T extends z.ZodType>(schema: T) => z.preprocess((value) => (value === '' ? undefined : value), schema);

/** How long messages are kept unless their endpoint says otherwise (docs/operating.md, Message retention). */
export const DEFAULT_MESSAGE_RETENTION_DAYS = 30;
/**
 * Messages of each kind one transaction of the retention sweeper removes: small enough that a
 * batch's commit (its WAL, full pages after a checkpoint) delays the live commits beside it by
 * little (docs/operating.md, Message retention, for the measurement); and on the embedded database,
 * whose one connection requests wait for while a batch runs.
 */
export const DEFAULT_RETENTION_BATCH = 200;

/**
 * Messages one transaction of a bulk job retries or replays, and the pause after each
 * (docs/operating.md, Bulk retries and replays). Fewer on the embedded database, whose one
 * connection live requests wait for while a chunk runs.
 */
export const DEFAULT_BULK_CHUNK_SIZE = 250;
export const DEFAULT_EMBEDDED_BULK_CHUNK_SIZE = 100;
export const DEFAULT_BULK_CHUNK_DELAY_MS = 200;

/** Requests per second per API key (see docs/operating.md for why 200). */
export const DEFAULT_API_RATE_LIMIT = 200;

/**
 * Open WebSockets (CLI streams and inspector watch sockets) one process allows per API key, per
 * project and in all: each holds a file descriptor, and without a bound one tenant could take them all.
 */
export const DEFAULT_MAX_SOCKETS_PER_KEY = 100;
export const DEFAULT_MAX_SOCKETS_PER_PROJECT = 500;
export const DEFAULT_MAX_SOCKETS = 10_000;
/** 25 MiB: what providers such as GitHub send at most. */
export const DEFAULT_MAX_INGEST_BODY_BYTES = 25 * 1024 * 1024;
/**
 * Ingest body bytes being received at once in one process, and one source address's share: room for
 * seventeen bodies at the ingest limit from several senders, five from one (docs/operating.md,
 * Body limits and memory). A large body streams to the payload store as it arrives, so what this
 * bounds is mostly partial uploads on disk; a small one is held in memory.
 */
export const DEFAULT_INGEST_MAX_INFLIGHT_BYTES = 512 * 1024 * 1024;
export const DEFAULT_INGEST_MIN_UPLOAD_BYTES_PER_SECOND = 64 * 1024;
/**
 * Five days of nothing but failures: longer than the default retry schedule (about 28 hours), so
 * that an endpoint is paused only after messages have used up every attempt, and over a weekend.
 */
export const DEFAULT_ENDPOINT_PAUSE_AFTER_SECONDS = 5 * 24 * 60 * 60;
/** Messages that must have failed for good, besides the time, before a failing endpoint is paused: a few, not one unlucky one. */
export const ENDPOINT_PAUSE_MIN_FAILED_MESSAGES = 5;
/** Ten bodies at the ingest limit: a hundred deliveries of 25 MiB would hold 2.5 GB. */
export const DEFAULT_DELIVERY_MAX_BYTES = 256 * 1024 * 1024;

/**
 * PostgreSQL settings of the embedded database (PGlite), chosen by measurement (docs/operating.md):
 * PGlite's own default of 128 MB shared buffers is resident from the start and is most of its memory.
 * PGlite runs PostgreSQL single-user, one backend and no autovacuum workers, yet PostgreSQL sizes its
 * shared memory for 100 connections and 16 worker slots, more to allocate and zero at each start.
 * The WAL sizes bound what the data dir keeps of WAL between the checkpoints the sweepers make
 * (sweepers/embedded.ts): PostgreSQL's 1 GB suits a server's disk, not a developer's data dir.
 * HOOKRELAY_PGLITE_OPTIONS adds to these and wins over them, name by name.
 */
export const DEFAULT_PGLITE_SETTINGS: Readonly<Record<string, string>> = Object.freeze({
  shared_buffers: '16MB',
  max_connections: '2',
  autovacuum_worker_slots: '1',
  max_wal_size: '128MB',
  min_wal_size: '32MB',
});

/**
 * How V8 compiles PGlite's WebAssembly, set in HOOKRELAY_PGLITE_OPTIONS as `wasm_tier`: `baseline`
 * (Liftoff only) or `optimizing` (V8's default: hot functions recompiled by TurboFan, whose code
 * stays in memory). See docs/operating.md for the measurements behind the default.
 */
export const PGLITE_WASM_TIERS = ['baseline', 'optimizing'] as const;
export type PGliteWasmTier = (typeof PGLITE_WASM_TIERS)[number];
export const DEFAULT_PGLITE_WASM_TIER: PGliteWasmTier = 'baseline';

const PGLITE_SETTING = /^([a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)?)=([A-Za-z0-9_.:+-]+)$/;

/** `s3://bucket[/prefix]`, the bucket named as S3 allows (3–63 lowercase letters, digits, dots, hyphens). */
const S3_STORE_URL = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/([^?#]*))?$/;

/** What `hookrelay-server --help` says of a variable (see configVariables). */
export interface VariableDoc {
  /** One line: what the variable sets. */
  description: string;
  /** The default in words, where the schema has none of its own (one computed in parseConfig). */
  shownDefault?: string;
}

const variableDocs = z.registry<VariableDoc, z.ZodType>();

/** A variable of the schema with its description: every variable has one (`--help` lists them all). */
function documented<T extends z.ZodType>(doc: string | VariableDoc, schema: T): T {
  variableDocs.add(schema, typeof doc === 'string' ? { description: doc } : doc);
  return schema;
}

const EnvSchema = z.object({
  HOOKRELAY_HOST: documented('interface to listen on', z.string().min(1).default('127.0.0.1')),
  HOOKRELAY_PORT: documented(
    'port to listen on; 0 picks a free one',
    z.coerce
      .number({ message: 'HOOKRELAY_PORT must be a port number' })
      .int()
      .min(0, 'HOOKRELAY_PORT must be 0-65535')
      .max(65535, 'HOOKRELAY_PORT must be 0-65535')
      .default(8787),
  ),
  HOOKRELAY_INGEST_PORT: documented(
    'a second port, on the same host, serving only /in/…, /pull/… and /healthz',
    z.preprocess(
      (value) => (value === '' ? undefined : value),
      z.coerce
        .number({ message: 'HOOKRELAY_INGEST_PORT must be a port number' })
        .int('HOOKRELAY_INGEST_PORT must be a port number')
        .min(0, 'HOOKRELAY_INGEST_PORT must be 0-65535')
        .max(65535, 'HOOKRELAY_INGEST_PORT must be 0-65535')
        .optional(),
    ),
  ),
  DATABASE_URL: documented(
    'PostgreSQL (postgres://…); unset = the embedded database (PGlite) in the data dir',
    z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'DATABASE_URL must be a postgres:// URL')
      .optional()
      .or(z.literal('').transform(() => undefined)),
  ),
  HOOKRELAY_DATA_DIR: documented(
    {
      description: 'embedded database, generated keys and the lock file; with DATABASE_URL only the bootstrap key file, and only when set',
      shownDefault: './.hookrelay (with DATABASE_URL: none)',
    },
    z.string().min(1).default('./.hookrelay'),
  ),
  HOOKRELAY_PUBLIC_URL: documented(
    { description: 'base of the ingest URLs the API returns', shownDefault: 'http://localhost:PORT' },
    z
      .url({ message: 'HOOKRELAY_PUBLIC_URL must be an http(s) URL', protocol: /^https?$/ })
      .optional()
      .or(z.literal('').transform(() => undefined)),
  ),
  HOOKRELAY_ROLES: documented(
    'what this process runs: any of api, ingest, worker, comma-separated',
    z
      .string()
      .default('api,ingest,worker')
      .transform((value, ctx) => {
        const roles = value.split(',').map((r) => r.trim()).filter((r) => r.length > 0);
        for (const role of roles) {
          if (!(ROLES as readonly string[]).includes(role)) {
            ctx.addIssue({ code: 'custom', message: `HOOKRELAY_ROLES: unknown role "${role}" (allowed: ${ROLES.join(', ')})` });
            return z.NEVER;
          }
        }
        if (roles.length === 0) {
          ctx.addIssue({ code: 'custom', message: 'HOOKRELAY_ROLES must name at least one role' });
          return z.NEVER;
        }
        return new Set(roles as Role[]);
      }),
  ),
  HOOKRELAY_BOOTSTRAP_API_KEY: documented(
    { description: 'API key of the first project, created on an empty database (hr_ + 40 hex)', shownDefault: 'generated and printed once' },
    z
      .string()
      .regex(API_KEY_PATTERN, 'HOOKRELAY_BOOTSTRAP_API_KEY must be hr_ followed by 40 lowercase hex characters')
      .optional()
      .or(z.literal('').transform(() => undefined)),
  ),
  HOOKRELAY_ENCRYPTION_KEY: documented({ description: '64 hex characters sealing secrets at rest; required with DATABASE_URL', shownDefault: 'embedded: generated into the data dir' }, z.string().optional().or(z.literal('').transform(() => undefined))),
  HOOKRELAY_PREVIOUS_ENCRYPTION_KEY: documented('the key being replaced: opens secrets until `encryption rotate-key` sealed them again', z.string().optional().or(z.literal('').transform(() => undefined))),
  HOOKRELAY_ALLOW_PRIVATE_NETWORKS: documented('deliver to loopback and private addresses (local development and tests only)', booleanFromEnv.default(false)),
  HOOKRELAY_RETRY_SCHEDULE: documented(
    { description: 'seconds between delivery attempts, comma-separated', shownDefault: '5,300,1800,7200,18000,36000,36000' },
    z
      .string()
      .optional()
      .transform((value, ctx) => {
        if (value === undefined || value.trim() === '') return undefined;
        const seconds = value.split(',').map((s) => Number(s.trim()));
        if (seconds.some((s) => !Number.isFinite(s) || s < 0)) {
          ctx.addIssue({ code: 'custom', message: 'HOOKRELAY_RETRY_SCHEDULE must be a comma list of seconds, e.g. 1,5,30' });
          return z.NEVER;
        }
        return seconds;
      }),
  ),
  HOOKRELAY_MAX_BODY_BYTES: documented('largest request body of the /v1 API', positiveInt('HOOKRELAY_MAX_BODY_BYTES').default(1024 * 1024)),
  // A body travels to a listener base64-encoded inside one stream frame: the bound keeps that frame
  // within what a JavaScript string holds and what a CLI accepts (STREAM_FRAME_MAX_BYTES).
  HOOKRELAY_MAX_INGEST_BODY_BYTES: documented(
    `largest webhook body at /in/… and /pull/… (an endpoint's max_body_bytes may lower it); at most ${MAX_INGEST_BODY_BYTES_CEILING}`,
    positiveInt('HOOKRELAY_MAX_INGEST_BODY_BYTES')
      .max(MAX_INGEST_BODY_BYTES_CEILING, `HOOKRELAY_MAX_INGEST_BODY_BYTES must be at most ${MAX_INGEST_BODY_BYTES_CEILING}`)
      .default(DEFAULT_MAX_INGEST_BODY_BYTES),
  ),
  HOOKRELAY_INGEST_MAX_INFLIGHT_BYTES: documented(
    'webhook body bytes this process receives at once (a request past it is answered 503 with Retry-After before its body is read)',
    positiveInt('HOOKRELAY_INGEST_MAX_INFLIGHT_BYTES').max(2 ** 40).default(DEFAULT_INGEST_MAX_INFLIGHT_BYTES),
  ),
  HOOKRELAY_INGEST_MAX_INFLIGHT_BYTES_PER_SOURCE: documented(
    { description: "one source address's share of HOOKRELAY_INGEST_MAX_INFLIGHT_BYTES (an IPv6 address counts by its /64)", shownDefault: 'a quarter of HOOKRELAY_INGEST_MAX_INFLIGHT_BYTES' },
    unsetWhenEmpty(positiveInt('HOOKRELAY_INGEST_MAX_INFLIGHT_BYTES_PER_SOURCE').max(2 ** 40).optional()),
  ),
  HOOKRELAY_INGEST_MIN_UPLOAD_BYTES_PER_SECOND: documented(
    'rate a webhook body must keep arriving at past its first MiB, judged every 5 s (408 when slower); 0 = no minimum',
    unsetWhenEmpty(nonNegativeInt('HOOKRELAY_INGEST_MIN_UPLOAD_BYTES_PER_SECOND').default(DEFAULT_INGEST_MIN_UPLOAD_BYTES_PER_SECOND)),
  ),
  HOOKRELAY_LOG_LEVEL: documented('fatal, error, warn, info, debug, trace or silent', z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info')),
  HOOKRELAY_DB_POOL_SIZE: documented('PostgreSQL connections of this process', positiveInt('HOOKRELAY_DB_POOL_SIZE').default(10)),
  HOOKRELAY_TLS_CA_FILE: documented('extra CA certificates (PEM) trusted for deliveries', z.string().optional().or(z.literal('').transform(() => undefined))),
  HOOKRELAY_SWEEP_INTERVAL_SECONDS: documented('how often the sweepers run (retention, leases, embedded vacuum)', positiveInt('HOOKRELAY_SWEEP_INTERVAL_SECONDS').default(30)),
  HOOKRELAY_MESSAGE_RETENTION_DAYS: documented(
    "days outbound and inbound messages are kept, where their endpoint's retention_days is null; 0 = forever",
    unsetWhenEmpty(nonNegativeInt('HOOKRELAY_MESSAGE_RETENTION_DAYS').max(3650, 'HOOKRELAY_MESSAGE_RETENTION_DAYS must be at most 3650').default(DEFAULT_MESSAGE_RETENTION_DAYS)),
  ),
  HOOKRELAY_MESSAGE_RETENTION_BATCH_SIZE: documented(
    { description: 'messages of each kind removed per transaction of the retention sweeper', shownDefault: `${DEFAULT_RETENTION_BATCH}` },
    unsetWhenEmpty(positiveInt('HOOKRELAY_MESSAGE_RETENTION_BATCH_SIZE').max(10_000, 'HOOKRELAY_MESSAGE_RETENTION_BATCH_SIZE must be at most 10000').optional()),
  ),
  HOOKRELAY_BULK_CHUNK_SIZE: documented(
    { description: 'messages a bulk retry or replay job takes per transaction', shownDefault: `${DEFAULT_BULK_CHUNK_SIZE} (embedded: ${DEFAULT_EMBEDDED_BULK_CHUNK_SIZE})` },
    unsetWhenEmpty(positiveInt('HOOKRELAY_BULK_CHUNK_SIZE').max(10_000, 'HOOKRELAY_BULK_CHUNK_SIZE must be at most 10000').optional()),
  ),
  HOOKRELAY_BULK_CHUNK_DELAY_MS: documented(
    'pause of a bulk job after each chunk, so that live traffic comes first; 0 = none',
    unsetWhenEmpty(nonNegativeInt('HOOKRELAY_BULK_CHUNK_DELAY_MS').max(60_000, 'HOOKRELAY_BULK_CHUNK_DELAY_MS must be at most 60000').default(DEFAULT_BULK_CHUNK_DELAY_MS)),
  ),
  // Below the 300 s the providers' own checks allow by default, so that what goes out re-signed
  // at the threshold still has a minute of their tolerance for the local app to answer in.
  HOOKRELAY_RESIGN_AFTER_SECONDS: documented(
    "a delivery this long after its sender's signed timestamp goes re-signed with the endpoint's secret (docs/api.md, Late deliveries re-signed)",
    positiveInt('HOOKRELAY_RESIGN_AFTER_SECONDS').max(86_400).default(240),
  ),
  HOOKRELAY_STREAM_HEARTBEAT_SECONDS: documented('WebSocket ping interval; a peer missing a pong by the next ping is dropped', positiveInt('HOOKRELAY_STREAM_HEARTBEAT_SECONDS').default(15)),
  HOOKRELAY_MAX_SOCKETS_PER_KEY: documented('open WebSockets per API key in this process; 0 = no limit', unsetWhenEmpty(nonNegativeInt('HOOKRELAY_MAX_SOCKETS_PER_KEY').default(DEFAULT_MAX_SOCKETS_PER_KEY))),
  HOOKRELAY_MAX_SOCKETS_PER_PROJECT: documented('open WebSockets per project in this process; 0 = no limit', unsetWhenEmpty(nonNegativeInt('HOOKRELAY_MAX_SOCKETS_PER_PROJECT').default(DEFAULT_MAX_SOCKETS_PER_PROJECT))),
  HOOKRELAY_MAX_SOCKETS: documented('open WebSockets of this process; 0 = no limit', unsetWhenEmpty(nonNegativeInt('HOOKRELAY_MAX_SOCKETS').default(DEFAULT_MAX_SOCKETS))),
  // A delivery's lease must outlast a rate-limit wait (≤ 2 s) and the 15 s request timeout, or a slow
  // answer could be delivered twice.
  HOOKRELAY_DELIVERY_LEASE_SECONDS: documented(
    'how long a claimed delivery stays with its worker (at least 20)',
    positiveInt('HOOKRELAY_DELIVERY_LEASE_SECONDS')
      .min(20, 'HOOKRELAY_DELIVERY_LEASE_SECONDS must be at least 20 (the 15 s request timeout plus a rate-limit wait)')
      .default(30),
  ),
  HOOKRELAY_DELIVERY_CONCURRENCY: documented('deliveries in flight at once in one worker process', positiveInt('HOOKRELAY_DELIVERY_CONCURRENCY').max(10000).default(100)),
  HOOKRELAY_DELIVERY_MAX_BYTES: documented(
    'payload bytes one worker process holds for deliveries in flight at once (a larger payload still goes, alone)',
    positiveInt('HOOKRELAY_DELIVERY_MAX_BYTES').max(2 ** 31 - 1).default(DEFAULT_DELIVERY_MAX_BYTES),
  ),
  HOOKRELAY_ENDPOINT_PAUSE_AFTER_SECONDS: documented(
    `how long every delivery to an outbound endpoint must have failed, with at least ${ENDPOINT_PAUSE_MIN_FAILED_MESSAGES} of its messages failed for good, before hookrelay pauses it; 0 = never`,
    unsetWhenEmpty(nonNegativeInt('HOOKRELAY_ENDPOINT_PAUSE_AFTER_SECONDS').max(2 ** 31 - 1).default(DEFAULT_ENDPOINT_PAUSE_AFTER_SECONDS)),
  ),
  HOOKRELAY_HEADERS_TIMEOUT_SECONDS: documented("time a connection has to send a request's headers (408 after)", unsetWhenEmpty(positiveInt('HOOKRELAY_HEADERS_TIMEOUT_SECONDS').max(3600).default(10))),
  HOOKRELAY_REQUEST_TIMEOUT_SECONDS: documented('time a connection has to send a whole request (408 after)', unsetWhenEmpty(positiveInt('HOOKRELAY_REQUEST_TIMEOUT_SECONDS').max(3600).default(60))),
  HOOKRELAY_METRICS_TOKEN: documented({ description: 'when set, GET /metrics needs Authorization: Bearer <token>', shownDefault: 'unset: /metrics is open' }, z.string().optional().or(z.literal('').transform(() => undefined))),
  HOOKRELAY_PORTAL_FRAME_ANCESTORS: documented(
    { description: "comma-separated origins (https://app.example.com) whose pages may show the customer portal in a frame (the page's CSP frame-ancestors)", shownDefault: "unset: none, frame-ancestors 'none'" },
    z
      .string()
      .default('')
      .transform((value, ctx) => {
        const origins: string[] = [];
        for (const entry of value.split(',').map((part) => part.trim()).filter((part) => part !== '')) {
          const origin = parseFrameAncestor(entry);
          if (origin === undefined) {
            ctx.addIssue({ code: 'custom', message: `HOOKRELAY_PORTAL_FRAME_ANCESTORS: ${JSON.stringify(entry)} is not an origin: give scheme://host[:port] (http or https), no path` });
            return z.NEVER;
          }
          origins.push(origin);
        }
        return origins;
      }),
  ),
  HOOKRELAY_TRUSTED_PROXIES: documented(
    'comma-separated CIDR blocks of reverse proxies whose X-Forwarded-For/Forwarded is believed (client address for allowlists, rate limits and logs)',
    z
      .string()
      .default('')
      .transform((value, ctx) => {
        const blocks = value.split(',').map((block) => block.trim()).filter((block) => block !== '');
        for (const block of blocks) {
          const parsed = parseCidr(block);
          if ('error' in parsed) {
            ctx.addIssue({ code: 'custom', message: `HOOKRELAY_TRUSTED_PROXIES: ${parsed.error}` });
            return z.NEVER;
          }
        }
        return blocks;
      }),
  ),
  // Per API key and per process (the counters are in memory); 0 = off.
  HOOKRELAY_API_RATE_LIMIT: documented('/v1 requests per second per API key in this process; 0 = off', unsetWhenEmpty(nonNegativeInt('HOOKRELAY_API_RATE_LIMIT').max(1_000_000).default(DEFAULT_API_RATE_LIMIT))),
  HOOKRELAY_API_RATE_BURST: documented({ description: '/v1 requests an API key may make at once', shownDefault: 'twice the rate limit' }, unsetWhenEmpty(positiveInt('HOOKRELAY_API_RATE_BURST').max(10_000_000).optional())),
  HOOKRELAY_PGLITE_OPTIONS: documented(
    { description: 'embedded database: PostgreSQL settings as name=value, e.g. shared_buffers=64MB', shownDefault: 'shared_buffers=16MB,max_connections=2,autovacuum_worker_slots=1,max_wal_size=128MB,min_wal_size=32MB,wasm_tier=baseline' },
    z
      .string()
      .optional()
      .transform((value, ctx) => {
        const settings = emptyRecord<string>();
        for (const item of (value ?? '').split(/[\s,]+/).filter((s) => s !== '')) {
          const match = PGLITE_SETTING.exec(item);
          if (!match) {
            ctx.addIssue({
              code: 'custom',
              message: `HOOKRELAY_PGLITE_OPTIONS must be PostgreSQL settings as name=value separated by spaces or commas, e.g. shared_buffers=32MB,work_mem=4MB; got ${JSON.stringify(item)}`,
            });
            return z.NEVER;
          }
          settings[match[1]!] = match[2]!;
        }
        const { wasm_tier: wasmTier, ...postgresSettings } = settings;
        if (wasmTier !== undefined && !(PGLITE_WASM_TIERS as readonly string[]).includes(wasmTier)) {
          ctx.addIssue({ code: 'custom', message: `HOOKRELAY_PGLITE_OPTIONS: wasm_tier must be ${PGLITE_WASM_TIERS.join(' or ')}, got ${JSON.stringify(wasmTier)}` });
          return z.NEVER;
        }
        return { postgresSettings, wasmTier: wasmTier as PGliteWasmTier | undefined };
      }),
  ),
  HOOKRELAY_PAYLOAD_STORE: documented(
    { description: 'where payload bytes live: database or s3://bucket/prefix (needs @aws-sdk/client-s3)', shownDefault: 'database' },
    z
      .string()
      .optional()
      .transform((value, ctx) => {
        if (value === undefined || value === '' || value === 'database') return { kind: 'database' as const };
        const match = S3_STORE_URL.exec(value);
        const prefix = (match?.[2] ?? '').replace(/^\/+|\/+$/g, '');
        if (!match || prefix.split('/').some((segment) => segment === '.' || segment === '..' || (prefix !== '' && segment === ''))) {
          ctx.addIssue({
            code: 'custom',
            message: `HOOKRELAY_PAYLOAD_STORE must be "database" or s3://bucket/prefix (bucket: 3-63 lowercase letters, digits, dots or hyphens), got ${JSON.stringify(value)}`,
          });
          return z.NEVER;
        }
        return { kind: 's3' as const, bucket: match[1]!, prefix };
      }),
  ),
  // OpenTelemetry traces (docs/operating.md, Tracing): the specification's variables, read here like
  // every other setting. Tracing is on when an OTLP endpoint is set.
  OTEL_EXPORTER_OTLP_ENDPOINT: documented({ description: 'tracing: OTLP/HTTP collector base URL; spans go to <endpoint>/v1/traces', shownDefault: 'unset: tracing off' }, z.string().optional()),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: documented('tracing: the full URL spans are sent to; wins over OTEL_EXPORTER_OTLP_ENDPOINT', z.string().optional()),
  OTEL_EXPORTER_OTLP_PROTOCOL: documented({ description: 'tracing: http/protobuf or http/json', shownDefault: 'http/protobuf' }, z.string().optional()),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: documented('tracing: wins over OTEL_EXPORTER_OTLP_PROTOCOL', z.string().optional()),
  OTEL_EXPORTER_OTLP_HEADERS: documented('tracing: key=value,… (percent-encoded) sent with each export, e.g. an API key', z.string().optional()),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: documented('tracing: as OTEL_EXPORTER_OTLP_HEADERS, winning per key', z.string().optional()),
  OTEL_EXPORTER_OTLP_TIMEOUT: documented({ description: 'tracing: milliseconds one export may take', shownDefault: '10000' }, z.string().optional()),
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: documented('tracing: wins over OTEL_EXPORTER_OTLP_TIMEOUT', z.string().optional()),
  OTEL_SERVICE_NAME: documented({ description: 'tracing: the service.name of the spans', shownDefault: 'hookrelay-server' }, z.string().optional()),
  OTEL_RESOURCE_ATTRIBUTES: documented('tracing: key=value,… (percent-encoded) added to every span\'s resource', z.string().optional()),
  OTEL_TRACES_SAMPLER: documented({ description: 'tracing: always_on, always_off, traceidratio or parentbased_… of these', shownDefault: 'parentbased_always_on' }, z.string().optional()),
  OTEL_TRACES_SAMPLER_ARG: documented({ description: 'tracing: the ratio (0 to 1) of the traceidratio samplers', shownDefault: '1' }, z.string().optional()),
  OTEL_BSP_SCHEDULE_DELAY: documented({ description: 'tracing: milliseconds finished spans wait to be exported together', shownDefault: '5000' }, z.string().optional()),
  OTEL_SDK_DISABLED: documented('tracing: true turns it off even with an endpoint', booleanFromEnv.default(false)),
  // The usual AWS variables; read (and checked) only when the payload store is on S3.
  AWS_ENDPOINT_URL: documented("S3 payload store: the store's URL (MinIO, R2, …); unset = AWS", z.string().optional()),
  AWS_ENDPOINT_URL_S3: documented('S3 payload store: wins over AWS_ENDPOINT_URL', z.string().optional()),
  AWS_REGION: documented({ description: 'S3 payload store: signing region', shownDefault: 'AWS_DEFAULT_REGION, else us-east-1' }, z.string().optional()),
  AWS_DEFAULT_REGION: documented('S3 payload store: signing region when AWS_REGION is unset', z.string().optional()),
  AWS_ACCESS_KEY_ID: documented("S3 payload store: access key (with AWS_SECRET_ACCESS_KEY; neither = the AWS SDK's chain)", z.string().optional()),
  AWS_SECRET_ACCESS_KEY: documented('S3 payload store: secret key', z.string().optional()),
  AWS_SESSION_TOKEN: documented('S3 payload store: session token', z.string().optional()),
});

/** One environment variable as `hookrelay-server --help` lists it. */
export interface ConfigVariable {
  name: string;
  /** The command-line flag that sets it, or undefined for a variable read from the environment only. */
  flag: string | undefined;
  /** A flag without a value (`--allow-private-networks`). */
  boolean: boolean;
  /** The default in words, or undefined when unset means "none". */
  default: string | undefined;
  description: string;
}

/** The default a schema declares (through the wrappers a variable's schema is made of), if any. */
function declaredDefault(schema: z.core.$ZodType): unknown {
  const def = schema._zod.def as { type: string; defaultValue?: unknown; in?: z.core.$ZodType; out?: z.core.$ZodType; innerType?: z.core.$ZodType; options?: readonly z.core.$ZodType[] };
  switch (def.type) {
    case 'default':
      return def.defaultValue;
    case 'pipe':
      return declaredDefault(def.in!) ?? declaredDefault(def.out!);
    case 'optional':
    case 'nullable':
      return declaredDefault(def.innerType!);
    case 'union':
      for (const option of def.options ?? []) {
        const value = declaredDefault(option);
        if (value !== undefined) return value;
      }
      return undefined;
    default:
      return undefined;
  }
}

/**
 * Every variable of the schema, in its order, with its flag, default and description. The AWS_*
 * and OTEL_* variables keep the names of the AWS SDK and of the OpenTelemetry specification and are
 * read from the environment only; every other variable has a flag named after it
 * (HOOKRELAY_LOG_LEVEL → --log-level).
 */
export function configVariables(): ConfigVariable[] {
  return Object.entries(EnvSchema.shape).map(([name, schema]) => {
    const doc = variableDocs.get(schema);
    if (doc === undefined) throw new Error(`${name} has no description in the configuration schema`);
    const declared = declaredDefault(schema);
    const flag = name.startsWith('AWS_') || name.startsWith('OTEL_') ? undefined : name.replace(/^HOOKRELAY_/, '').toLowerCase().replaceAll('_', '-');
    return {
      name,
      flag,
      boolean: typeof declared === 'boolean',
      default: doc.shownDefault ?? (declared === undefined || declared === '' ? undefined : String(declared)),
      description: doc.description,
    };
  });
}

export const DEFAULT_RETRY_SCHEDULE_SECONDS = [5, 300, 1800, 7200, 18000, 36000, 36000] as const;

export interface Config {
  host: string;
  port: number;
  /** A second listener, on the same host, serving only `/in/…`, `/pull/…` and `/healthz`. */
  ingestPort: number | undefined;
  databaseUrl: string | undefined;
  dataDir: string;
  /**
   * HOOKRELAY_DATA_DIR (or --data-dir) was given. With DATABASE_URL the data dir is otherwise only
   * its default, relative to the working directory, which the server does not write to.
   */
  dataDirGiven: boolean;
  /** `{receive_base}`; when unset it follows the port actually bound (see `receiveBase`). */
  publicUrl: string | undefined;
  roles: ReadonlySet<Role>;
  bootstrapApiKey: string | undefined;
  encryptionKey: string | undefined;
  /** The key being replaced: it opens secrets (never seals them) until `encryption rotate-key` has re-sealed them. */
  previousEncryptionKey: string | undefined;
  allowPrivateNetworks: boolean;
  retryScheduleSeconds: readonly number[];
  /** The body limit of the /v1 API. */
  maxBodyBytes: number;
  /** The body limit of ingestion (`/in/...`, `/pull/...`); an endpoint's `max_body_bytes` may lower it. */
  maxIngestBodyBytes: number;
  /** Ingest body bytes being received at once: in all, and per source address. */
  ingestInflight: { maxBytes: number; perSourceBytes: number };
  /** The rate a body must keep arriving at past its first MiB; 0 = no minimum. */
  ingestMinUploadBytesPerSecond: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  dbPoolSize: number;
  tlsCaFile: string | undefined;
  sweepIntervalSeconds: number;
  /** Days messages are kept where their endpoint's retention_days is null; 0 = forever. */
  messageRetentionDays: number;
  /** Messages of each kind one transaction of the retention sweeper removes. */
  messageRetentionBatchSize: number;
  /** WebSocket ping interval; a peer that misses a pong by the next ping is dropped. */
  streamHeartbeatSeconds: number;
  /** A delivery later than this after its signed timestamp is re-signed (docs/api.md, Late deliveries re-signed). */
  resignAfterSeconds: number;
  /** Open WebSockets this process allows per API key, per project and in all; 0 = no limit. */
  maxSockets: { perKey: number; perProject: number; total: number };
  /** Messages per transaction of a bulk job, and the pause after each (HOOKRELAY_BULK_CHUNK_SIZE, HOOKRELAY_BULK_CHUNK_DELAY_MS). */
  bulkChunkSize: number;
  bulkChunkDelayMs: number;
  /** How long a claimed delivery stays leased to its worker before the reaper may hand it to another. */
  deliveryLeaseSeconds: number;
  /** Deliveries in flight at once in one worker process. */
  deliveryConcurrency: number;
  /** Payload bytes of the deliveries one worker holds at once (HOOKRELAY_DELIVERY_MAX_BYTES). */
  deliveryMaxBytes: number;
  /** How long every delivery to an outbound endpoint must have failed before hookrelay pauses it; 0 = never. */
  endpointPauseAfterSeconds: number;
  /** How long a connection may take to send a request's line and headers (408 after). */
  headersTimeoutSeconds: number;
  /** How long a connection may take to send a whole request, headers and body (408 after). */
  requestTimeoutSeconds: number;
  /** When set, GET /metrics requires `Authorization: Bearer <token>`; unset, it is open (Prometheus practice). */
  metricsToken: string | undefined;
  /** /v1 requests per second per API key in this process; 0 = no limit. */
  apiRateLimit: number;
  /** CIDR blocks of the reverse proxies whose forwarding headers are believed (security/client-address.ts). */
  trustedProxies: readonly string[];
  /** Origins whose pages may frame the customer portal (its CSP `frame-ancestors`); empty: none. */
  portalFrameAncestors: readonly string[];
  /** /v1 requests an API key may make at once (default twice the rate). */
  apiRateBurst: number;
  /** Where payload bytes live (docs/operating.md, Payload storage on S3). */
  payloadStore: PayloadStoreConfig;
  /** PostgreSQL settings of the embedded database: the defaults with HOOKRELAY_PGLITE_OPTIONS over them. */
  pgliteSettings: Readonly<Record<string, string>>;
  /** How V8 compiles the embedded database's WebAssembly (HOOKRELAY_PGLITE_OPTIONS `wasm_tier`). */
  pgliteWasmTier: PGliteWasmTier;
  /** OpenTelemetry trace export; undefined (tracing off, no OpenTelemetry module loaded) without an OTLP endpoint. */
  tracing: TracingConfig | undefined;
}

export interface S3PayloadStoreConfig {
  kind: 's3';
  bucket: string;
  /** Object keys are `${prefix}/${key}`; no leading or trailing slash, '' for none. */
  prefix: string;
  /** AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL (MinIO, R2, …; addressed path-style); unset = AWS. */
  endpoint: string | undefined;
  region: string;
  /** Unset: the AWS SDK's default chain (instance role, web identity, shared config files). */
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | undefined;
}

export type PayloadStoreConfig = { kind: 'database' } | S3PayloadStoreConfig;

/** The part of the ingest budget only small bodies (at most 1 MiB) may use: an eighth. */
export function smallBodyReserve(maxBytes: number): number {
  return Math.floor(maxBytes / 8);
}

export function parseConfig(env: Readonly<Record<string, string | undefined>>): Config {
  const result = EnvSchema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => {
      const key = issue.path.join('.');
      return issue.message.includes(key) || key === '' ? issue.message : `${key}: ${issue.message}`;
    });
    throw new ConfigError(`invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const e = result.data;
  if (e.HOOKRELAY_INGEST_PORT !== undefined && !e.HOOKRELAY_ROLES.has('ingest')) {
    throw new ConfigError('invalid configuration:\n  HOOKRELAY_INGEST_PORT needs the ingest role in HOOKRELAY_ROLES (it serves only ingest URLs)');
  }
  if (e.HOOKRELAY_INGEST_PORT !== undefined && e.HOOKRELAY_INGEST_PORT !== 0 && e.HOOKRELAY_INGEST_PORT === e.HOOKRELAY_PORT) {
    throw new ConfigError('invalid configuration:\n  HOOKRELAY_INGEST_PORT must differ from HOOKRELAY_PORT');
  }
  if (e.HOOKRELAY_HEADERS_TIMEOUT_SECONDS > e.HOOKRELAY_REQUEST_TIMEOUT_SECONDS) {
    throw new ConfigError('invalid configuration:\n  HOOKRELAY_HEADERS_TIMEOUT_SECONDS must not be more than HOOKRELAY_REQUEST_TIMEOUT_SECONDS (the headers are part of the request)');
  }
  const ingestInflight = {
    maxBytes: e.HOOKRELAY_INGEST_MAX_INFLIGHT_BYTES,
    perSourceBytes: e.HOOKRELAY_INGEST_MAX_INFLIGHT_BYTES_PER_SOURCE ?? Math.max(e.HOOKRELAY_MAX_INGEST_BODY_BYTES, Math.floor(e.HOOKRELAY_INGEST_MAX_INFLIGHT_BYTES / 4)),
  };
  // A body at the ingest limit must fit in both, beside the part kept for small bodies.
  const largestAdmitted = ingestInflight.maxBytes - smallBodyReserve(ingestInflight.maxBytes);
  if (largestAdmitted < e.HOOKRELAY_MAX_INGEST_BODY_BYTES || ingestInflight.perSourceBytes < e.HOOKRELAY_MAX_INGEST_BODY_BYTES) {
    throw new ConfigError(
      `invalid configuration:\n  HOOKRELAY_INGEST_MAX_INFLIGHT_BYTES (less its eighth kept for small bodies) and HOOKRELAY_INGEST_MAX_INFLIGHT_BYTES_PER_SOURCE must each hold a body of HOOKRELAY_MAX_INGEST_BODY_BYTES (${e.HOOKRELAY_MAX_INGEST_BODY_BYTES})`,
    );
  }
  return {
    host: e.HOOKRELAY_HOST,
    port: e.HOOKRELAY_PORT,
    ingestPort: e.HOOKRELAY_INGEST_PORT,
    databaseUrl: e.DATABASE_URL,
    dataDir: path.resolve(e.HOOKRELAY_DATA_DIR),
    dataDirGiven: env.HOOKRELAY_DATA_DIR !== undefined,
    publicUrl: e.HOOKRELAY_PUBLIC_URL?.replace(/\/+$/, ''),
    roles: e.HOOKRELAY_ROLES,
    bootstrapApiKey: e.HOOKRELAY_BOOTSTRAP_API_KEY,
    encryptionKey: e.HOOKRELAY_ENCRYPTION_KEY,
    previousEncryptionKey: e.HOOKRELAY_PREVIOUS_ENCRYPTION_KEY,
    allowPrivateNetworks: e.HOOKRELAY_ALLOW_PRIVATE_NETWORKS,
    retryScheduleSeconds: e.HOOKRELAY_RETRY_SCHEDULE ?? DEFAULT_RETRY_SCHEDULE_SECONDS,
    maxBodyBytes: e.HOOKRELAY_MAX_BODY_BYTES,
    maxIngestBodyBytes: e.HOOKRELAY_MAX_INGEST_BODY_BYTES,
    ingestInflight,
    ingestMinUploadBytesPerSecond: e.HOOKRELAY_INGEST_MIN_UPLOAD_BYTES_PER_SECOND,
    logLevel: e.HOOKRELAY_LOG_LEVEL,
    dbPoolSize: e.HOOKRELAY_DB_POOL_SIZE,
    tlsCaFile: e.HOOKRELAY_TLS_CA_FILE,
    sweepIntervalSeconds: e.HOOKRELAY_SWEEP_INTERVAL_SECONDS,
    messageRetentionDays: e.HOOKRELAY_MESSAGE_RETENTION_DAYS,
    messageRetentionBatchSize: e.HOOKRELAY_MESSAGE_RETENTION_BATCH_SIZE ?? DEFAULT_RETENTION_BATCH,
    bulkChunkSize: e.HOOKRELAY_BULK_CHUNK_SIZE ?? (e.DATABASE_URL === undefined ? DEFAULT_EMBEDDED_BULK_CHUNK_SIZE : DEFAULT_BULK_CHUNK_SIZE),
    bulkChunkDelayMs: e.HOOKRELAY_BULK_CHUNK_DELAY_MS,
    streamHeartbeatSeconds: e.HOOKRELAY_STREAM_HEARTBEAT_SECONDS,
    resignAfterSeconds: e.HOOKRELAY_RESIGN_AFTER_SECONDS,
    maxSockets: { perKey: e.HOOKRELAY_MAX_SOCKETS_PER_KEY, perProject: e.HOOKRELAY_MAX_SOCKETS_PER_PROJECT, total: e.HOOKRELAY_MAX_SOCKETS },
    deliveryLeaseSeconds: e.HOOKRELAY_DELIVERY_LEASE_SECONDS,
    deliveryConcurrency: e.HOOKRELAY_DELIVERY_CONCURRENCY,
    deliveryMaxBytes: e.HOOKRELAY_DELIVERY_MAX_BYTES,
    endpointPauseAfterSeconds: e.HOOKRELAY_ENDPOINT_PAUSE_AFTER_SECONDS,
    headersTimeoutSeconds: e.HOOKRELAY_HEADERS_TIMEOUT_SECONDS,
    requestTimeoutSeconds: e.HOOKRELAY_REQUEST_TIMEOUT_SECONDS,
    metricsToken: e.HOOKRELAY_METRICS_TOKEN,
    apiRateLimit: e.HOOKRELAY_API_RATE_LIMIT,
    trustedProxies: e.HOOKRELAY_TRUSTED_PROXIES,
    portalFrameAncestors: e.HOOKRELAY_PORTAL_FRAME_ANCESTORS,
    apiRateBurst: e.HOOKRELAY_API_RATE_BURST ?? Math.max(1, 2 * e.HOOKRELAY_API_RATE_LIMIT),
    payloadStore: payloadStoreOf(e),
    pgliteSettings: { ...DEFAULT_PGLITE_SETTINGS, ...e.HOOKRELAY_PGLITE_OPTIONS.postgresSettings },
    pgliteWasmTier: e.HOOKRELAY_PGLITE_OPTIONS.wasmTier ?? DEFAULT_PGLITE_WASM_TIER,
    tracing: tracingOf(e),
  };
}


/** The payload store with its AWS settings; those are checked only when the store is on S3. */
function payloadStoreOf(e: z.output<typeof EnvSchema>): PayloadStoreConfig {
  const store = e.HOOKRELAY_PAYLOAD_STORE;
  if (store.kind === 'database') return store;
  const set = (value: string | undefined) => (value === undefined || value.trim() === '' ? undefined : value.trim());
  const problems: string[] = [];
  const endpointName = set(e.AWS_ENDPOINT_URL_S3) !== undefined ? 'AWS_ENDPOINT_URL_S3' : 'AWS_ENDPOINT_URL';
  const endpoint = set(e.AWS_ENDPOINT_URL_S3) ?? set(e.AWS_ENDPOINT_URL);
  if (endpoint !== undefined && !isHttpUrl(endpoint)) {
    problems.push(`${endpointName} must be an http(s) URL, got ${JSON.stringify(endpoint)}`);
  }
  const accessKeyId = set(e.AWS_ACCESS_KEY_ID);
  const secretAccessKey = set(e.AWS_SECRET_ACCESS_KEY);
  const sessionToken = set(e.AWS_SESSION_TOKEN);
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    problems.push('AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together (or neither, for the AWS SDK default credential chain)');
  } else if (sessionToken !== undefined && accessKeyId === undefined) {
    problems.push('AWS_SESSION_TOKEN needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY');
  }
  if (problems.length > 0) throw new ConfigError(`invalid configuration (HOOKRELAY_PAYLOAD_STORE=s3://…):\n  ${problems.join('\n  ')}`);
  return {
    ...store,
    endpoint,
    region: set(e.AWS_REGION) ?? set(e.AWS_DEFAULT_REGION) ?? 'us-east-1',
    credentials:
      accessKeyId !== undefined && secretAccessKey !== undefined
        ? { accessKeyId, secretAccessKey, ...(sessionToken !== undefined ? { sessionToken } : {}) }
        : undefined,
  };
}

/** `{receive_base}`: HOOKRELAY_PUBLIC_URL, else `http://localhost:<bound port>` (docs/api.md, Addresses). */
export function receiveBase(config: Config, boundPort: number): string {
  return config.publicUrl ?? `http://localhost:${boundPort}`;
}

/** The process environment, read here only: everything else receives a parsed Config. */
export function processEnvironment(): Readonly<Record<string, string | undefined>> {
  return process.env;
}
