// The admin API's scheduling settings: the router queues (GET/PUT /admin/queue) and conditional
// disaggregation (GET/PUT /admin/conditional-disagg), changed at runtime. A PUT body names the
// settings to change, checked against the same declarations as the config file (a null threshold
// turns the queue off); any mistake refuses the whole body and changes nothing.
import { Type, type TSchema } from '@sinclair/typebox';
import type { ConditionalDisaggSettings } from '../../routing/prefill/mode.js';
import type { QueueSettings, QueueStats } from '../../routing/queue/admission-queue.js';
import { check } from '../config/check.js';
import { ConditionalDisaggSchema, RouterQueueSchema } from '../config/schema.js';

/** Runtime scheduling settings; each setter checks the whole change first (TypeError/RangeError: nothing changed). */
export interface SchedulingPort {
  queue(): Readonly<QueueSettings>;
  setQueue(settings: Partial<QueueSettings>): QueueSettings;
  queueStats(): Record<string, QueueStats>;
  conditionalDisagg(): Readonly<ConditionalDisaggSettings>;
  setConditionalDisagg(settings: Partial<ConditionalDisaggSettings>): ConditionalDisaggSettings;
}

/** A body of changes: every field optional, none defaulted. */
function changes(schema: { properties: Record<string, TSchema> }, over: Record<string, TSchema> = {}) {
  const fields: Record<string, TSchema> = {};
  for (const [k, v] of Object.entries(schema.properties)) {
    const { default: _default, ...field } = v as TSchema & { default?: unknown };
    fields[k] = Type.Optional(over[k] ?? (field as TSchema));
  }
  return Type.Object(fields, { additionalProperties: false });
}

const threshold = RouterQueueSchema.properties.threshold;
const maxWait = RouterQueueSchema.properties.maxWaitMs;
const QueueChanges = changes(RouterQueueSchema, {
  threshold: Type.Union([Type.Number({ minimum: threshold.minimum, maximum: threshold.maximum }), Type.Null()], {
    expected: `a number in [${threshold.minimum}, ${threshold.maximum}], or null (off)`,
  }),
  maxWaitMs: Type.Union([Type.Number({ minimum: maxWait.minimum, maximum: maxWait.maximum }), Type.Null()], {
    expected: `a number in [${maxWait.minimum}, ${maxWait.maximum}], or null (no limit)`,
  }),
});
const ConditionalChanges = changes(ConditionalDisaggSchema);

export type SchedulingRoute = 'queue' | 'conditional-disagg';

export const SCHEDULING_PATHS: ReadonlyMap<string, SchedulingRoute> = new Map([
  ['/admin/queue', 'queue'],
  ['/admin/conditional-disagg', 'conditional-disagg'],
]);

/** GET: the settings (and the queues' state); PUT: changes them, answering the new settings. */
export function handleScheduling(route: SchedulingRoute, method: 'GET' | 'PUT', body: Record<string, unknown> | undefined, port: SchedulingPort): unknown {
  if (route === 'queue') {
    if (method === 'PUT') {
      check(QueueChanges, body, { root: 'body', prefix: '' });
      port.setQueue(body as Partial<QueueSettings>);
    }
    return { settings: port.queue(), queues: port.queueStats() };
  }
  if (method === 'PUT') {
    check(ConditionalChanges, body, { root: 'body', prefix: '' });
    port.setConditionalDisagg(body as Partial<ConditionalDisaggSettings>);
  }
  return { settings: port.conditionalDisagg() };
}
