import { diag, DiagLogLevel, ROOT_CONTEXT, SpanKind as OtelSpanKind, SpanStatusCode, trace, type Attributes, type Link, type Span as OtelSpan, type SpanContext } from '@opentelemetry/api';
import { parseTraceParent } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { TraceSampler, TracingConfig } from '../config-tracing.js';
import type { Span, SpanAttributes, SpanKind, SpanOptions, SpanRef, Tracing } from './span.js';

/** Loaded only when tracing is configured (tracing.ts): the OpenTelemetry SDK behind the server's Tracing. */

const KINDS: Record<SpanKind, OtelSpanKind> = {
  server: OtelSpanKind.SERVER,
  client: OtelSpanKind.CLIENT,
  producer: OtelSpanKind.PRODUCER,
  consumer: OtelSpanKind.CONSUMER,
  internal: OtelSpanKind.INTERNAL,
};

function samplerOf(name: TraceSampler, ratio: number): Sampler {
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  }
}

function attributesOf(attributes: SpanAttributes | undefined): Attributes | undefined {
  if (attributes === undefined) return undefined;
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) out[key] = value;
  return out;
}

const traceparentOf = (c: SpanContext): string => `00-${c.traceId}-${c.spanId}-${(c.traceFlags & 0xff).toString(16).padStart(2, '0')}`;

class OtelSpanHandle implements Span {
  constructor(readonly span: OtelSpan) {}
  setAttribute(name: string, value: string | number | boolean | undefined): void {
    if (value !== undefined) this.span.setAttribute(name, value);
  }
  fail(reason: string): void {
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: reason });
  }
  end(): void {
    this.span.end();
  }
  get traceparent(): string {
    return traceparentOf(this.span.spanContext());
  }
}

/** A span's context from a span of this process or a stored `traceparent`; undefined when unusable. */
function contextOf(ref: SpanRef): SpanContext | undefined {
  if (ref === null || ref === undefined) return undefined;
  if (typeof ref !== 'string') return ref instanceof OtelSpanHandle ? ref.span.spanContext() : undefined;
  return parseTraceParent(ref) ?? undefined;
}

/** Where the SDK's own complaints go (an export the collector refused or never answered, spans dropped). */
export interface TracingLog {
  warn(fields: object, message: string): void;
}

export function openOtelTracing(config: TracingConfig, serviceVersion: string, log: TracingLog): Tracing {
  // Warnings and errors only, as warn lines: a collector that is away is not a failure of the server.
  const complain = (message: string) => log.warn({ detail: message.slice(0, 2000) }, 'tracing: the OpenTelemetry SDK reports a problem');
  diag.setLogger(
    { error: complain, warn: complain, info: () => {}, debug: () => {}, verbose: () => {} },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
  const exporterConfig = { url: config.url, headers: { ...config.headers }, timeoutMillis: config.timeoutMs };
  const exporter: SpanExporter = config.protocol === 'http/json' ? new OtlpJsonExporter(exporterConfig) : new OtlpProtobufExporter(exporterConfig);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      ...config.resourceAttributes,
      [ATTR_SERVICE_NAME]: config.serviceName,
      [ATTR_SERVICE_VERSION]: config.resourceAttributes[ATTR_SERVICE_VERSION] ?? serviceVersion,
    }),
    sampler: samplerOf(config.sampler, config.samplerRatio),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: config.scheduleDelayMs })],
  });
  const tracer = provider.getTracer('hookrelay-server', serviceVersion);
  let stopped: Promise<void> | undefined;
  return {
    enabled: true,
    startSpan(name: string, options: SpanOptions = {}): Span {
      const parent = contextOf(options.parent);
      const links: Link[] = [];
      for (const ref of options.links ?? []) {
        const context = contextOf(ref);
        if (context !== undefined) links.push({ context });
      }
      const span = tracer.startSpan(
        name,
        {
          kind: KINDS[options.kind ?? 'internal'],
          ...(options.attributes !== undefined ? { attributes: attributesOf(options.attributes)! } : {}),
          ...(links.length > 0 ? { links } : {}),
          ...(options.startTime !== undefined ? { startTime: options.startTime } : {}),
        },
        parent === undefined ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, parent),
      );
      return new OtelSpanHandle(span);
    },
    shutdown() {
      // Exports what is buffered; a collector that is away costs at most the export timeout.
      stopped ??= provider.shutdown().catch((error: unknown) => complain(`the last export failed: ${error instanceof Error ? error.message : String(error)}`));
      return stopped;
    },
  };
}
