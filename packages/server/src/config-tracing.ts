import { emptyRecord } from '@hookrelay/shared';
import { ConfigError } from './errors.js';

/**
 * Tracing's settings from the OTEL_* variables of the OpenTelemetry specification, which config.ts
 * parses with the rest of the environment (docs/operating.md, Tracing).
 */

/** The OTEL_* variables as config.ts's schema parses them. */
export interface OtelVariables {
  OTEL_EXPORTER_OTLP_ENDPOINT?: string | undefined;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string | undefined;
  OTEL_EXPORTER_OTLP_PROTOCOL?: string | undefined;
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?: string | undefined;
  OTEL_EXPORTER_OTLP_HEADERS?: string | undefined;
  OTEL_EXPORTER_OTLP_TRACES_HEADERS?: string | undefined;
  OTEL_EXPORTER_OTLP_TIMEOUT?: string | undefined;
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT?: string | undefined;
  OTEL_SERVICE_NAME?: string | undefined;
  OTEL_RESOURCE_ATTRIBUTES?: string | undefined;
  OTEL_TRACES_SAMPLER?: string | undefined;
  OTEL_TRACES_SAMPLER_ARG?: string | undefined;
  OTEL_BSP_SCHEDULE_DELAY?: string | undefined;
  OTEL_SDK_DISABLED: boolean;
}

/** Whether `value` is an http: or https: URL (a collector's, an S3 endpoint's). */
export function isHttpUrl(value: string): boolean {
  try {
    return /^https?:$/.test(new URL(value).protocol);
  } catch {
    return false;
  }
}

export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];
export const TRACE_SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;
export type TraceSampler = (typeof TRACE_SAMPLERS)[number];
/** The service name of the exported spans unless OTEL_SERVICE_NAME (or `service.name` in OTEL_RESOURCE_ATTRIBUTES) says otherwise. */
export const DEFAULT_OTEL_SERVICE_NAME = 'hookrelay-server';

export interface TracingConfig {
  /** The full URL spans are POSTed to (`…/v1/traces`). */
  url: string;
  protocol: OtlpProtocol;
  /** Sent with every export (a collector's API key): never logged. */
  headers: Readonly<Record<string, string>>;
  timeoutMs: number;
  serviceName: string;
  /** OTEL_RESOURCE_ATTRIBUTES, decoded; `service.name` is `serviceName`. */
  resourceAttributes: Readonly<Record<string, string>>;
  sampler: TraceSampler;
  /** The ratio of the `traceidratio` samplers, 0 to 1. */
  samplerRatio: number;
  /** How long finished spans wait to be exported together. */
  scheduleDelayMs: number;
}

/**
 * `key=value,key=value` with percent-encoded values (OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS);
 * `problems` gets a line for a malformed list.
 */
function keyValueList(name: string, value: string | undefined, problems: string[]): Record<string, string> {
  const out = emptyRecord<string>();
  for (const item of (value ?? '').split(',')) {
    if (item.trim() === '') continue;
    const eq = item.indexOf('=');
    const key = eq <= 0 ? '' : item.slice(0, eq).trim();
    let decoded: string | undefined;
    try {
      decoded = eq <= 0 ? undefined : decodeURIComponent(item.slice(eq + 1).trim());
    } catch {
      decoded = undefined;
    }
    if (key === '' || decoded === undefined) {
      problems.push(`${name} must be key=value pairs separated by commas (values percent-encoded)`);
      return out;
    }
    out[key] = decoded;
  }
  return out;
}

/** Tracing from the OTEL_* variables; undefined without an endpoint or with OTEL_SDK_DISABLED=true. */
export function tracingOf(e: OtelVariables): TracingConfig | undefined {
  const set = (value: string | undefined) => (value === undefined || value.trim() === '' ? undefined : value.trim());
  const tracesEndpoint = set(e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const baseEndpoint = set(e.OTEL_EXPORTER_OTLP_ENDPOINT);
  if (e.OTEL_SDK_DISABLED || (tracesEndpoint === undefined && baseEndpoint === undefined)) return undefined;
  const problems: string[] = [];
  // The signal's own endpoint is used as given; the base endpoint gets the signal's path (the specification's rule).
  const endpointName = tracesEndpoint !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  const url = tracesEndpoint ?? `${baseEndpoint!.replace(/\/+$/, '')}/v1/traces`;
  if (!isHttpUrl(url)) problems.push(`${endpointName} must be an http(s) URL`);
  const protocol = set(e.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) ?? set(e.OTEL_EXPORTER_OTLP_PROTOCOL) ?? 'http/protobuf';
  if (!(OTLP_PROTOCOLS as readonly string[]).includes(protocol)) {
    problems.push(`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL / OTEL_EXPORTER_OTLP_PROTOCOL must be ${OTLP_PROTOCOLS.join(' or ')} (grpc is not supported), got ${JSON.stringify(protocol)}`);
  }
  const headers = {
    ...keyValueList('OTEL_EXPORTER_OTLP_HEADERS', e.OTEL_EXPORTER_OTLP_HEADERS, problems),
    ...keyValueList('OTEL_EXPORTER_OTLP_TRACES_HEADERS', e.OTEL_EXPORTER_OTLP_TRACES_HEADERS, problems),
  };
  const timeoutText = set(e.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT) ?? set(e.OTEL_EXPORTER_OTLP_TIMEOUT) ?? '10000';
  const timeoutMs = Number(timeoutText);
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) problems.push(`OTEL_EXPORTER_OTLP_TRACES_TIMEOUT / OTEL_EXPORTER_OTLP_TIMEOUT must be a positive number of milliseconds, got ${JSON.stringify(timeoutText)}`);
  const delayText = set(e.OTEL_BSP_SCHEDULE_DELAY) ?? '5000';
  const scheduleDelayMs = Number(delayText);
  if (!Number.isInteger(scheduleDelayMs) || scheduleDelayMs < 0) problems.push(`OTEL_BSP_SCHEDULE_DELAY must be a number of milliseconds, got ${JSON.stringify(delayText)}`);
  const sampler = set(e.OTEL_TRACES_SAMPLER) ?? 'parentbased_always_on';
  if (!(TRACE_SAMPLERS as readonly string[]).includes(sampler)) problems.push(`OTEL_TRACES_SAMPLER must be one of ${TRACE_SAMPLERS.join(', ')}, got ${JSON.stringify(sampler)}`);
  const ratioText = set(e.OTEL_TRACES_SAMPLER_ARG);
  const samplerRatio = ratioText === undefined || !sampler.endsWith('traceidratio') ? 1 : Number(ratioText);
  if (!(samplerRatio >= 0 && samplerRatio <= 1)) problems.push(`OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1, got ${JSON.stringify(ratioText)}`);
  const resourceAttributes = keyValueList('OTEL_RESOURCE_ATTRIBUTES', e.OTEL_RESOURCE_ATTRIBUTES, problems);
  if (problems.length > 0) throw new ConfigError(`invalid configuration (tracing):\n  ${problems.join('\n  ')}`);
  const serviceName = set(e.OTEL_SERVICE_NAME) ?? resourceAttributes['service.name'] ?? DEFAULT_OTEL_SERVICE_NAME;
  return {
    url,
    protocol: protocol as OtlpProtocol,
    headers,
    timeoutMs,
    serviceName,
    resourceAttributes,
    sampler: sampler as TraceSampler,
    samplerRatio,
    scheduleDelayMs,
  };
}
