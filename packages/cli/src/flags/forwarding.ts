import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Flags } from '@oclif/core';
import { usageFailure } from '../errors.js';
import { formatDuration, parseDuration } from '../listen/duration.js';
import type { TlsSettings } from '../listen/forwarder.js';
import { DEFAULT_TIMING, type TransportMode } from '../listen/ports.js';
import { PROJECT_FILE, readProjectFile } from '../listen/project-file.js';
import { isLoopbackHost, parseRoute, type ForwardRoute } from '../listen/routes.js';
import type { ForwardingSettings } from '../listen/session.js';
import type { ListenFilter } from '@hookrelay/shared';

export const TRANSPORTS = ['auto', 'ws', 'poll'] as const;

/**
 * The forwarding flags of `listen` and `dev`: where the app is, how the connection is made, and the
 * time limits. One definition, so that both commands read and document them the same way.
 */
export const forwardingFlags = {
  'forward-to': Flags.string({
    char: 'f',
    summary: 'Where your app listens: a port (3000), port and path (3000/webhooks), host:port/path or an http(s) URL.',
    description: `Repeat it to route: [PROVIDER=][PATH-PREFIX|event:GLOB=]TARGET, the first match wins. stripe=4000 sends Stripe's webhooks to port 4000 (those whose headers are Stripe's; in dev --verify, those of the stripe endpoint); /stripe=4000 sends what was posted to <ingest URL>/stripe/… to port 4000 (the prefix removed); event:push=3000/github sends GitHub push events to 3000/github; a plain TARGET takes everything. Without --forward-to the routes of ${PROJECT_FILE} (current directory, or --config) are used. A message no route takes is skipped.`,
    multiple: true,
  }),
  events: Flags.string({
    summary: 'Only these event types, comma-separated globs (push,pull_request or checkout.*); the server skips the rest.',
    helpValue: 'GLOBS',
  }),
  path: Flags.string({ summary: "Only webhooks whose sub-path matches this glob ('/github/*'); the server skips the rest.", helpValue: 'GLOB' }),
  config: Flags.string({ summary: `Read the routes from this project file instead of ./${PROJECT_FILE}.`, helpValue: 'PATH' }),
  'ca-file': Flags.string({ summary: 'Trust this CA certificate (PEM) for an https:// app, e.g. a self-signed one.', helpValue: 'PATH' }),
  insecure: Flags.boolean({ summary: "Skip the certificate checks of an https:// app; only for loopback targets (localhost, 127.0.0.1, ::1)." }),
  transport: Flags.string({
    summary: 'auto: WebSocket, falling back to polling when it cannot be used; ws: WebSocket only; poll: polling only.',
    options: [...TRANSPORTS],
    default: 'auto',
  }),
  'preserve-host': Flags.boolean({ summary: "Send the sender's Host header instead of the target's." }),
  'max-wait': Flags.string({
    summary: 'How long to hold one message while your app cannot be reached before reporting the error and going on (default: until it answers).',
  }),
  timeout: Flags.string({ summary: 'How long your app may take to answer one request; then the error is reported. 0: no limit (a breakpoint).', default: '30s' }),
  'capture-response-bytes': Flags.integer({
    summary: "How many bytes of each answer's body to keep and report, with its headers (0: none).",
    default: 65_536,
    min: 0,
    max: 65_536,
  }),
  verbose: Flags.boolean({ char: 'v', summary: "Print the app's answer (headers and body) under each delivery line." }),
  'heartbeat-timeout': Flags.string({
    summary: 'Drop and reopen a WebSocket that has been silent this long (the server pings every 15 s).',
    default: '45s',
  }),
};

/** A duration flag in milliseconds; a bad value is a usage error naming the flag. */
export function durationFlag(flag: string, value: string | undefined, minimumMs = 0): number | undefined {
  if (value === undefined) return undefined;
  let ms: number;
  try {
    ms = parseDuration(value);
  } catch (error) {
    throw usageFailure(`--${flag}: ${(error as Error).message}`);
  }
  if (ms < minimumMs) throw usageFailure(`--${flag} must be at least ${formatDuration(minimumMs)}`);
  return ms;
}

export interface ForwardingFlagValues {
  events?: string | undefined;
  path?: string | undefined;
  'forward-to'?: string[] | undefined;
  config?: string | undefined;
  'ca-file'?: string | undefined;
  insecure: boolean;
  transport: string;
  'preserve-host': boolean;
  'max-wait'?: string | undefined;
  timeout: string;
  'heartbeat-timeout': string;
  'capture-response-bytes': number;
  verbose: boolean;
}

function routesOf(flags: ForwardingFlagValues, cwd: string): { routes: ForwardRoute[]; from: string } {
  const given = flags['forward-to'] ?? [];
  if (given.length > 0) {
    if (flags.config !== undefined) throw usageFailure('--forward-to and --config cannot be used together', `Put every route in ${flags.config}, or give them all as --forward-to.`);
    try {
      return { routes: given.map((value) => parseRoute(value)), from: '--forward-to' };
    } catch (error) {
      throw usageFailure(`--forward-to: ${(error as Error).message}`);
    }
  }
  let file;
  try {
    file = readProjectFile(flags.config, cwd);
  } catch (error) {
    throw usageFailure((error as Error).message, `See \`hookrelay listen --help\` for the format of ${PROJECT_FILE}.`);
  }
  if (file === undefined) {
    throw usageFailure(`no --forward-to and no ${PROJECT_FILE} in ${cwd}`, 'Give --forward-to 3000 (your app\'s port), or commit the routes in hookrelay.json.');
  }
  return { routes: file.routes, from: file.file };
}

function tlsOf(flags: ForwardingFlagValues, routes: readonly ForwardRoute[], cwd: string): TlsSettings {
  if (flags.insecure) {
    const remote = routes.find((route) => !isLoopbackHost(new URL(route.target.origin).hostname));
    if (remote !== undefined) {
      throw usageFailure(
        `--insecure is only accepted for loopback targets, not ${remote.target.display}`,
        'Certificate checks protect what leaves this machine: trust its CA with --ca-file instead.',
      );
    }
  }
  let ca: Buffer | undefined;
  if (flags['ca-file'] !== undefined) {
    const file = resolve(cwd, flags['ca-file']);
    try {
      ca = readFileSync(file);
    } catch (error) {
      throw usageFailure(`--ca-file: cannot read ${file} (${(error as Error).message})`);
    }
    if (!ca.toString('latin1').includes('-----BEGIN CERTIFICATE-----')) throw usageFailure(`--ca-file: ${file} holds no PEM certificate`);
  }
  return { ca, insecure: flags.insecure };
}

function filterOf(flags: ForwardingFlagValues): ListenFilter {
  const filter: ListenFilter = {};
  if (flags.events !== undefined) {
    const globs = flags.events.split(',').map((glob) => glob.trim()).filter((glob) => glob !== '');
    if (globs.length === 0) throw usageFailure('--events needs at least one event type glob, such as push,pull_request or checkout.*');
    filter.events = globs.join(',');
  }
  if (flags.path !== undefined) {
    if (flags.path === '') throw usageFailure("--path needs a glob of the sub-path, such as '/github/*'");
    filter.path = flags.path;
  }
  return filter;
}

/** The forwarding flags checked and parsed (and the project file read), before anything is started. */
export function forwardingSettings(flags: ForwardingFlagValues, cwd: string = process.cwd()): ForwardingSettings {
  const { routes, from } = routesOf(flags, cwd);
  return {
    filter: filterOf(flags),
    routes,
    routesFrom: from,
    tls: tlsOf(flags, routes, cwd),
    transport: flags.transport as TransportMode,
    preserveHost: flags['preserve-host'],
    maxWaitMs: durationFlag('max-wait', flags['max-wait']),
    timeoutMs: /^0+(ms|s|m|h)?$/u.test(flags.timeout.trim()) ? 0 : (durationFlag('timeout', flags.timeout, 1) ?? 30_000),
    heartbeatTimeoutMs: durationFlag('heartbeat-timeout', flags['heartbeat-timeout'], 1000) ?? DEFAULT_TIMING.heartbeatTimeoutMs,
    captureResponseBytes: flags['capture-response-bytes'],
    verbose: flags.verbose,
  };
}
