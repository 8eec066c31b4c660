import type { TracingConfig } from '../config-tracing.js';
import { ConfigError } from '../errors.js';
import { SERVER_PACKAGE_DIR } from '../version.js';
import { installCommand } from '@hookrelay/shared/install-command';
import type { Span, SpanRef, Tracing } from './span.js';

/** The span interface (span.ts), for the modules that make spans. */
export type { Span, SpanAttributes, SpanAttributeValue, SpanKind, SpanOptions, SpanRef, Tracing } from './span.js';

const NOOP_SPAN: Span = Object.freeze({
  setAttribute() {},
  fail() {},
  end() {},
  traceparent: undefined,
});

export const NOOP_TRACING: Tracing = Object.freeze({
  enabled: false,
  startSpan: () => NOOP_SPAN,
  shutdown: async () => {},
});

/** The packages tracing needs, for the message of a server installed without them. */
export const OTEL_PACKAGES = [
  '@opentelemetry/api@1.9',
  '@opentelemetry/core@2.12.1',
  '@opentelemetry/resources@2.12.1',
  '@opentelemetry/sdk-trace-base@2.12.1',
  '@opentelemetry/exporter-trace-otlp-http@0.223.1',
  '@opentelemetry/exporter-trace-otlp-proto@0.223.1',
  '@opentelemetry/semantic-conventions@1',
] as const;

/** A configuration the installed packages cannot serve: the process says so and exits 2, like any. */
export class TracingUnavailableError extends ConfigError {}

/** The OpenTelemetry SDK behind the server's Tracing, loaded once; a TracingUnavailableError when it is not installed. */
async function loadOtel(): Promise<typeof import('./otel.js')> {
  try {
    return await import('./otel.js');
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new TracingUnavailableError(
      `tracing is configured (OTEL_EXPORTER_OTLP_ENDPOINT) but the OpenTelemetry packages are not installed next to the server: ${installCommand(OTEL_PACKAGES, SERVER_PACKAGE_DIR)} (or unset the OTEL_EXPORTER_OTLP_* endpoint)`,
      { cause: error },
    );
  }
}

/**
 * Throws the TracingUnavailableError of a configuration the installed packages cannot serve. The
 * start calls it before it opens the database, so that such a refusal changes nothing.
 */
export async function checkTracingAvailable(config: TracingConfig | undefined): Promise<void> {
  if (config !== undefined) await loadOtel();
}

/**
 * The tracing of a configuration: the no-op without one (nothing is loaded), else the OpenTelemetry
 * SDK exporting over OTLP/HTTP, loaded now.
 */
export async function openTracing(
  config: TracingConfig | undefined,
  serviceVersion: string,
  log: { warn(fields: object, message: string): void },
): Promise<Tracing> {
  if (config === undefined) return NOOP_TRACING;
  return (await loadOtel()).openOtelTracing(config, serviceVersion, log);
}

/**
 * A group commit's `commit` with a span per batch (`name`, its size in `hookrelay.batch.size`),
 * linked to the span of each item's request: a batch serves many traces, so it belongs to none of
 * them and starts a trace of its own. Without tracing, `commit` itself.
 */
export function traceCommits<T, R>(
  tracing: Tracing,
  name: string,
  commit: (items: T[]) => Promise<readonly R[]>,
  linkOf: (item: T) => SpanRef,
  bytesOf?: (item: T) => number,
): (items: T[]) => Promise<readonly R[]> {
  if (!tracing.enabled) return commit;
  return async (items) => {
    let bytes = 0;
    if (bytesOf) for (const item of items) bytes += bytesOf(item);
    const span = tracing.startSpan(name, {
      links: items.map(linkOf),
      attributes: { 'hookrelay.batch.size': items.length, ...(bytesOf ? { 'hookrelay.batch.bytes': bytes } : {}) },
    });
    try {
      return await commit(items);
    } catch (error) {
      span.fail(error instanceof Error ? error.name : 'commit failed');
      throw error;
    } finally {
      span.end();
    }
  };
}
