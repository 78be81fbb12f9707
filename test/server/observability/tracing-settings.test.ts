// Tracing's settings from the config file and OpenTelemetry's environment variables, and the SDK
// loaded only when tracing is on.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { tracingSettings } from '../../../src/server/observability/tracing.js';

describe('tracingSettings', () => {
  it('is off without config and without OTEL_TRACES_EXPORTER=otlp', () => {
    expect(tracingSettings(undefined, {})).toBeUndefined();
    expect(tracingSettings({}, { OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
    expect(tracingSettings({ enabled: false }, { OTEL_TRACES_EXPORTER: 'otlp' })).toBeUndefined();
    expect(tracingSettings(undefined, { OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
  });

  it('takes the standard environment variables for what the config leaves out', () => {
    expect(tracingSettings(undefined, { OTEL_TRACES_EXPORTER: 'otlp' })).toEqual({
      protocol: 'http/protobuf',
      serviceName: 'kvroute',
      sampler: { name: 'parentbased_always_on' },
    });
    const env = {
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc',
      OTEL_SERVICE_NAME: 'edge',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.01',
    };
    expect(tracingSettings(undefined, env)).toEqual({ protocol: 'grpc', serviceName: 'edge', sampler: { name: 'parentbased_traceidratio', ratio: 0.01 } });
    expect(tracingSettings(undefined, { ...env, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: undefined })?.protocol).toBe('http/json');
    expect(tracingSettings(undefined, { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'always_off' })?.sampler).toEqual({ name: 'always_off' });
  });

  it("prefers the config's settings", () => {
    const env = { OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_SERVICE_NAME: 'edge', OTEL_TRACES_SAMPLER: 'always_off' };
    expect(tracingSettings({ enabled: true, endpoint: 'http://c:4318/v1/traces', protocol: 'http/json', serviceName: 'r1', sampleRatio: 0.5 }, env)).toEqual({
      protocol: 'http/json',
      endpoint: 'http://c:4318/v1/traces',
      serviceName: 'r1',
      sampler: { name: 'parentbased_traceidratio', ratio: 0.5 },
    });
  });

  it('refuses a malformed variable, naming it', () => {
    expect(() => tracingSettings(undefined, { OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(/OTEL_TRACES_EXPORTER must be otlp or none/);
    expect(() => tracingSettings(undefined, { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' })).toThrow(RangeError);
    expect(() => tracingSettings(undefined, { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'sometimes' })).toThrow(/OTEL_TRACES_SAMPLER must be one of/);
    expect(() => tracingSettings(undefined, { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' })).toThrow(
      /OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1/,
    );
  });
});

describe('the OpenTelemetry SDK', () => {
  const script = fileURLToPath(new URL('./fixtures/router-imports.ts', import.meta.url));
  const imported = async (tracing: 'on' | 'off'): Promise<string[]> => {
    const env = { ...process.env, OTEL_TRACES_EXPORTER: undefined };
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script, tracing], { env, timeout: 60_000 });
    return JSON.parse(stdout) as string[];
  };

  it('is not even imported when tracing is off, and is when it is on', async () => {
    expect(await imported('off')).toEqual([]);
    const on = await imported('on');
    for (const pkg of ['api', 'sdk-trace-base', 'exporter-trace-otlp-proto'])
      expect(
        on.some((u) => u.includes(`/@opentelemetry/${pkg}/`)),
        pkg,
      ).toBe(true);
  });
});
