// OpenTelemetry tracing of requests, off by default. The settings come from the config file's
// `tracing` and, for what it leaves out, OpenTelemetry's standard environment variables. Off,
// nothing of OpenTelemetry is imported and requests carry no trace (routing's `trace?.…` calls
// cost one check); on, otel-tracing.ts is loaded once, with the SDK and the chosen OTLP exporter.
import { OTLP_PROTOCOLS } from '../config/operations-schema.js';
import { packageVersion } from '../../util/package-version.js';
import type { OtlpProtocol, SamplerSetting, Tracing, TracingConfig, TracingSettings } from './tracing-api.js';

export type * from './tracing-api.js';

const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;

/**
 * The tracing settings, or undefined when tracing is off: the config's fields first, then
 * OTEL_TRACES_EXPORTER (otlp turns it on), OTEL_SDK_DISABLED, OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL,
 * OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG. A malformed variable is a
 * RangeError naming it.
 */
export function tracingSettings(config: TracingConfig | undefined, env: Record<string, string | undefined> = process.env): TracingSettings | undefined {
  const c = config ?? {};
  if (!(c.enabled ?? tracesExporterIsOtlp(env.OTEL_TRACES_EXPORTER))) return undefined;
  if (c.enabled === undefined && env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const protocol = c.protocol ?? protocolOf(env);
  const serviceName = c.serviceName ?? (nonEmpty(env.OTEL_SERVICE_NAME) || 'kvroute');
  const sampler: SamplerSetting = c.sampleRatio !== undefined ? { name: 'parentbased_traceidratio', ratio: c.sampleRatio } : samplerOf(env);
  return c.endpoint === undefined ? { protocol, serviceName, sampler } : { protocol, endpoint: c.endpoint, serviceName, sampler };
}

function nonEmpty(v: string | undefined): string {
  return v?.trim() ?? '';
}

/** OTEL_TRACES_EXPORTER: a comma-separated list; otlp turns tracing on, none or absent leave it off. */
function tracesExporterIsOtlp(v: string | undefined): boolean {
  const names = nonEmpty(v)
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '');
  for (const n of names) {
    if (n !== 'otlp' && n !== 'none') throw new RangeError(`OTEL_TRACES_EXPORTER must be otlp or none (kvroute exports over OTLP only), got '${v}'`);
  }
  return names.includes('otlp') && !names.includes('none');
}

function protocolOf(env: Record<string, string | undefined>): OtlpProtocol {
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL'] as const) {
    const v = nonEmpty(env[name]);
    if (v === '') continue;
    if (!(OTLP_PROTOCOLS as readonly string[]).includes(v)) throw new RangeError(`${name} must be one of ${OTLP_PROTOCOLS.join(', ')}, got '${v}'`);
    return v as OtlpProtocol;
  }
  return 'http/protobuf';
}

function samplerOf(env: Record<string, string | undefined>): SamplerSetting {
  const name = nonEmpty(env.OTEL_TRACES_SAMPLER).toLowerCase() || 'parentbased_always_on';
  if (!(SAMPLERS as readonly string[]).includes(name))
    throw new RangeError(`OTEL_TRACES_SAMPLER must be one of ${SAMPLERS.join(', ')}, got '${env.OTEL_TRACES_SAMPLER}'`);
  if (name !== 'traceidratio' && name !== 'parentbased_traceidratio') return { name: name as 'always_on' };
  const arg = nonEmpty(env.OTEL_TRACES_SAMPLER_ARG);
  const ratio = arg === '' ? 1 : Number(arg);
  if (!(ratio >= 0 && ratio <= 1)) throw new RangeError(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got '${arg}'`);
  return { name, ratio };
}

/** The tracer of `settings` (the SDK loaded now, for the first time), or undefined when tracing is off. */
export async function loadTracing(settings: TracingSettings | undefined): Promise<Tracing | undefined> {
  if (settings === undefined) return undefined;
  const { createOtelTracing } = await import('./otel-tracing.js');
  return createOtelTracing(settings, packageVersion());
}
