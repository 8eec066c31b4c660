import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';

/** The OTEL_* variables as the OpenTelemetry specification defines them, read from the injected environment. */
const tracingOf = (env: Record<string, string>) => parseConfig(env).tracing;

describe('tracing configuration', () => {
  it('is off without an OTLP endpoint, and with OTEL_SDK_DISABLED=true', () => {
    expect(tracingOf({})).toBeUndefined();
    expect(tracingOf({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on', OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBeUndefined();
    expect(tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
  });

  it('appends /v1/traces to the base endpoint and takes the traces endpoint as given', () => {
    expect(tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })?.url).toBe('http://collector:4318/v1/traces');
    expect(tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector/otlp/' })?.url).toBe('https://collector/otlp/v1/traces');
    expect(
      tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:9999/custom' })?.url,
    ).toBe('http://traces:9999/custom');
    expect(() => tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT must be an http\(s\) URL/);
  });

  it('defaults to http/protobuf, takes http/json (the traces variable first) and refuses grpc', () => {
    const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(tracingOf(base)?.protocol).toBe('http/protobuf');
    expect(tracingOf({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })?.protocol).toBe('http/json');
    expect(tracingOf({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' })?.protocol).toBe('http/protobuf');
    expect(() => tracingOf({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(ConfigError);
    expect(() => tracingOf({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/grpc is not supported/);
  });

  it('decodes headers and resource attributes; the traces headers win; OTEL_SERVICE_NAME wins over service.name', () => {
    const tracing = tracingOf({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=base,x-team=a%20b',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-api-key=traces',
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attributes,deployment.environment=prod',
    });
    expect(tracing?.headers).toEqual({ 'x-api-key': 'traces', 'x-team': 'a b' });
    expect(tracing?.serviceName).toBe('from-attributes');
    expect(tracing?.resourceAttributes).toMatchObject({ 'deployment.environment': 'prod' });
    expect(tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SERVICE_NAME: 'mine', OTEL_RESOURCE_ATTRIBUTES: 'service.name=other' })?.serviceName).toBe('mine');
    expect(tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })?.serviceName).toBe('hookrelay-server');
    expect(() => tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_RESOURCE_ATTRIBUTES: 'novalue' })).toThrow(/OTEL_RESOURCE_ATTRIBUTES must be key=value/);
    expect(() => tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'k=%E0%A4%A' })).toThrow(/OTEL_EXPORTER_OTLP_HEADERS/);
  });

  it('takes the specification’s samplers and their ratio, and refuses others', () => {
    const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(tracingOf(base)).toMatchObject({ sampler: 'parentbased_always_on', samplerRatio: 1 });
    expect(tracingOf({ ...base, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' })).toMatchObject({ sampler: 'parentbased_traceidratio', samplerRatio: 0.25 });
    expect(() => tracingOf({ ...base, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' })).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
    expect(() => tracingOf({ ...base, OTEL_TRACES_SAMPLER: 'jaeger_remote' })).toThrow(/OTEL_TRACES_SAMPLER must be one of/);
  });

  it('reads the export timeout and the batch delay', () => {
    const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(tracingOf(base)).toMatchObject({ timeoutMs: 10_000, scheduleDelayMs: 5000 });
    expect(tracingOf({ ...base, OTEL_EXPORTER_OTLP_TIMEOUT: '3000', OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '2000', OTEL_BSP_SCHEDULE_DELAY: '100' })).toMatchObject({
      timeoutMs: 2000,
      scheduleDelayMs: 100,
    });
    expect(() => tracingOf({ ...base, OTEL_EXPORTER_OTLP_TIMEOUT: 'soon' })).toThrow(/OTEL_EXPORTER_OTLP_TRACES_TIMEOUT/);
  });
});
