// The process's tracing (lib/runtime/tracing.ts) from msgx.tracing: off, undefined, and nothing of
// OpenTelemetry is imported; on, lib/runtime/otel.ts is.
import type { Slices } from '../core/config.ts';
import type { Logger } from './log.ts';
import type { Tracing } from './tracing.ts';

/**
 * The process's tracing, or undefined when msgx.tracing is off (then nothing of OpenTelemetry is
 * imported). `service` names the process (service.name `msgx-<process>` unless OTEL_SERVICE_NAME).
 */
export async function startTracing(settings: Slices['tracing'], service: string, log: Logger): Promise<Tracing | undefined> {
  if (!settings.on) return undefined;
  const { openTelemetry } = await import('./otel.ts');
  return openTelemetry(settings, service, log);
}
