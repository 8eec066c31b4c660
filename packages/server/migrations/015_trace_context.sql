-- The W3C traceparent of the span of the request that brought an inbound message (docs/operating.md,
-- Tracing): the spans of its stream pushes, results and delivery attempts, in any process, join that
-- trace. NULL when tracing was off. Nullable with no default: adding it rewrites no row.
ALTER TABLE inbound_messages ADD COLUMN trace_context text;
