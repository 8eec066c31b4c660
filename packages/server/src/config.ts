import path from 'node:path';
import { z } from 'zod';
import { API_KEY_PATTERN } from '@hookrelay/shared';

/**
 * Server configuration (decisions.md §11), parsed once from an injected environment. Command-line
 * flags are turned into the same variables by main.ts and win over the environment.
 */
export const ROLES = ['api', 'ingest', 'worker'] as const;
export type Role = (typeof ROLES)[number];

const booleanFromEnv = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', ''], { message: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const positiveInt = (name: string) =>
  z.coerce.number({ message: `${name} must be an integer` }).int(`${name} must be an integer`).positive(`${name} must be positive`);

const EnvSchema = z.object({
  HOOKRELAY_HOST: z.string().min(1).default('127.0.0.1'),
  HOOKRELAY_PORT: z.coerce
    .number({ message: 'HOOKRELAY_PORT must be a port number' })
    .int()
    .min(0, 'HOOKRELAY_PORT must be 0-65535')
    .max(65535, 'HOOKRELAY_PORT must be 0-65535')
    .default(8787),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'DATABASE_URL must be a postgres:// URL')
    .optional()
    .or(z.literal('').transform(() => undefined)),
  HOOKRELAY_DATA_DIR: z.string().min(1).default('./.hookrelay'),
  HOOKRELAY_PUBLIC_URL: z
    .url({ message: 'HOOKRELAY_PUBLIC_URL must be an http(s) URL', protocol: /^https?$/ })
    .optional()
    .or(z.literal('').transform(() => undefined)),
  HOOKRELAY_ROLES: z
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
  HOOKRELAY_BOOTSTRAP_API_KEY: z
    .string()
    .regex(API_KEY_PATTERN, 'HOOKRELAY_BOOTSTRAP_API_KEY must be hr_ followed by 40 lowercase hex characters')
    .optional()
    .or(z.literal('').transform(() => undefined)),
  HOOKRELAY_ENCRYPTION_KEY: z.string().optional().or(z.literal('').transform(() => undefined)),
  HOOKRELAY_ALLOW_PRIVATE_NETWORKS: booleanFromEnv.default(false),
  HOOKRELAY_RETRY_SCHEDULE: z
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
  HOOKRELAY_MAX_BODY_BYTES: positiveInt('HOOKRELAY_MAX_BODY_BYTES').default(1024 * 1024),
  HOOKRELAY_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  HOOKRELAY_DB_POOL_SIZE: positiveInt('HOOKRELAY_DB_POOL_SIZE').default(10),
  HOOKRELAY_TLS_CA_FILE: z.string().optional().or(z.literal('').transform(() => undefined)),
  HOOKRELAY_SWEEP_INTERVAL_SECONDS: positiveInt('HOOKRELAY_SWEEP_INTERVAL_SECONDS').default(30),
  HOOKRELAY_STREAM_HEARTBEAT_SECONDS: positiveInt('HOOKRELAY_STREAM_HEARTBEAT_SECONDS').default(15),
  // A delivery's lease must outlast a rate-limit wait (≤ 2 s) and the 15 s request timeout, or a slow
  // answer could be delivered twice.
  HOOKRELAY_DELIVERY_LEASE_SECONDS: positiveInt('HOOKRELAY_DELIVERY_LEASE_SECONDS')
    .min(20, 'HOOKRELAY_DELIVERY_LEASE_SECONDS must be at least 20 (the 15 s request timeout plus a rate-limit wait)')
    .default(30),
  HOOKRELAY_DELIVERY_CONCURRENCY: positiveInt('HOOKRELAY_DELIVERY_CONCURRENCY').max(10000).default(100),
});

export const DEFAULT_RETRY_SCHEDULE_SECONDS = [5, 300, 1800, 7200, 18000, 36000, 36000] as const;

export interface Config {
  host: string;
  port: number;
  databaseUrl: string | undefined;
  dataDir: string;
  /** `{receive_base}`; when unset it follows the port actually bound (see `receiveBase`). */
  publicUrl: string | undefined;
  roles: ReadonlySet<Role>;
  bootstrapApiKey: string | undefined;
  encryptionKey: string | undefined;
  allowPrivateNetworks: boolean;
  retryScheduleSeconds: readonly number[];
  maxBodyBytes: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  dbPoolSize: number;
  tlsCaFile: string | undefined;
  sweepIntervalSeconds: number;
  /** WebSocket ping interval; a peer that misses a pong by the next ping is dropped. */
  streamHeartbeatSeconds: number;
  /** How long a claimed delivery stays leased to its worker before the reaper may hand it to another. */
  deliveryLeaseSeconds: number;
  /** Deliveries in flight at once in one worker process. */
  deliveryConcurrency: number;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
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
  return {
    host: e.HOOKRELAY_HOST,
    port: e.HOOKRELAY_PORT,
    databaseUrl: e.DATABASE_URL,
    dataDir: path.resolve(e.HOOKRELAY_DATA_DIR),
    publicUrl: e.HOOKRELAY_PUBLIC_URL?.replace(/\/+$/, ''),
    roles: e.HOOKRELAY_ROLES,
    bootstrapApiKey: e.HOOKRELAY_BOOTSTRAP_API_KEY,
    encryptionKey: e.HOOKRELAY_ENCRYPTION_KEY,
    allowPrivateNetworks: e.HOOKRELAY_ALLOW_PRIVATE_NETWORKS,
    retryScheduleSeconds: e.HOOKRELAY_RETRY_SCHEDULE ?? DEFAULT_RETRY_SCHEDULE_SECONDS,
    maxBodyBytes: e.HOOKRELAY_MAX_BODY_BYTES,
    logLevel: e.HOOKRELAY_LOG_LEVEL,
    dbPoolSize: e.HOOKRELAY_DB_POOL_SIZE,
    tlsCaFile: e.HOOKRELAY_TLS_CA_FILE,
    sweepIntervalSeconds: e.HOOKRELAY_SWEEP_INTERVAL_SECONDS,
    streamHeartbeatSeconds: e.HOOKRELAY_STREAM_HEARTBEAT_SECONDS,
    deliveryLeaseSeconds: e.HOOKRELAY_DELIVERY_LEASE_SECONDS,
    deliveryConcurrency: e.HOOKRELAY_DELIVERY_CONCURRENCY,
  };
}

/** `{receive_base}`: HOOKRELAY_PUBLIC_URL, else `http://localhost:<bound port>` (decisions.md §3). */
export function receiveBase(config: Config, boundPort: number): string {
  return config.publicUrl ?? `http://localhost:${boundPort}`;
}

/** The process environment, read here only: everything else receives a parsed Config. */
export function processEnvironment(): Readonly<Record<string, string | undefined>> {
  return process.env;
}
