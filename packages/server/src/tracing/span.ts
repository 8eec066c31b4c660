/**
 * The server's spans, behind an interface of its own: the OpenTelemetry modules (otel.ts) are
 * loaded only when tracing is configured (`openTracing`, tracing.ts), so a server without it pays
 * one call of a no-op per span site and loads nothing (docs/operating.md, Tracing). Parents and
 * links are explicit — a span of this process or a W3C `traceparent` text, as stored with a
 * message — rather than an ambient context: a webhook's spans are made in several processes and
 * batches, never on one call stack.
 */
export type SpanKind = 'server' | 'client' | 'producer' | 'consumer' | 'internal';
export type SpanAttributeValue = string | number | boolean;
export type SpanAttributes = Readonly<Record<string, SpanAttributeValue | undefined>>;
/** A span of this process, or a `traceparent` (`00-<trace id>-<span id>-<flags>`); null/undefined: none. */
export type SpanRef = Span | string | null | undefined;

export interface SpanOptions {
  kind?: SpanKind;
  /** The parent; without one the span starts a trace of its own. */
  parent?: SpanRef;
  links?: readonly SpanRef[];
  attributes?: SpanAttributes;
  /** When it began (epoch milliseconds), if before the call. */
  startTime?: number;
}

export interface Span {
  setAttribute(name: string, value: SpanAttributeValue | undefined): void;
  /** Marks the span failed, with a short reason (never a body or a secret). */
  fail(reason: string): void;
  end(): void;
  /** The span's W3C `traceparent`: what a message stores so that later spans join its trace. */
  readonly traceparent: string | undefined;
}

export interface Tracing {
  /** False when tracing is off: span sites skip the work of building attributes. */
  readonly enabled: boolean;
  startSpan(name: string, options?: SpanOptions): Span;
  /** Exports what is buffered and stops (the graceful stop). */
  shutdown(): Promise<void>;
}
