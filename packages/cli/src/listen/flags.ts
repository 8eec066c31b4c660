import { Flags } from '@oclif/core';
import { usageFailure } from '../errors.js';
import { formatDuration, parseDuration } from './duration.js';
import type { TransportMode } from './listener.js';
import { parseForwardTo, type ForwardTarget } from './target.js';

export const TRANSPORTS = ['auto', 'ws', 'poll'] as const;

/**
 * The forwarding flags of `listen` and `dev`: where the app is, how the connection is made, and the
 * time limits. One definition, so that both commands read and document them the same way.
 */
export const forwardingFlags = {
  'forward-to': Flags.string({
    char: 'f',
    summary: 'Where your app listens: a port (3000), port and path (3000/webhooks), host:port/path or an http(s) URL.',
    required: true,
  }),
  transport: Flags.string({
    summary: 'auto: WebSocket, falling back to polling when it cannot be used; ws: WebSocket only; poll: polling only.',
    options: [...TRANSPORTS],
    default: 'auto',
  }),
  'preserve-host': Flags.boolean({ summary: "Send the sender's Host header instead of the target's." }),
  'max-wait': Flags.string({
    summary: 'How long to hold one message while your app cannot be reached before reporting the error and going on (default: until it answers).',
  }),
  timeout: Flags.string({ summary: 'How long your app may take to answer one request; then the error is reported.', default: '30s' }),
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

export interface ForwardingSettings {
  target: ForwardTarget;
  transport: TransportMode;
  preserveHost: boolean;
  timeoutMs: number;
  maxWaitMs: number | undefined;
  heartbeatTimeoutMs: number;
}

export interface ForwardingFlagValues {
  'forward-to': string;
  transport: string;
  'preserve-host': boolean;
  'max-wait'?: string | undefined;
  timeout: string;
  'heartbeat-timeout': string;
}

/** The forwarding flags checked and parsed, before anything is started. */
export function forwardingSettings(flags: ForwardingFlagValues): ForwardingSettings {
  let target: ForwardTarget;
  try {
    target = parseForwardTo(flags['forward-to']);
  } catch (error) {
    throw usageFailure(`--forward-to: ${(error as Error).message}`);
  }
  return {
    target,
    transport: flags.transport as TransportMode,
    preserveHost: flags['preserve-host'],
    maxWaitMs: durationFlag('max-wait', flags['max-wait']),
    timeoutMs: durationFlag('timeout', flags.timeout, 1) ?? 30_000,
    heartbeatTimeoutMs: durationFlag('heartbeat-timeout', flags['heartbeat-timeout'], 1000) ?? 45_000,
  };
}
