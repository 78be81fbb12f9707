// A request's priority class as each engine kind reads it in the request body's `priority` field
// (kvroute's class: higher goes first). vLLM (--scheduling-policy priority) schedules lower values
// first, so the class goes negated; SGLang (--enable-priority-scheduling) schedules higher values
// first by default (unless --schedule-low-priority-values-first); TensorRT-LLM's OpenAI server
// takes no priority. Only for engines started with priority scheduling: vLLM refuses a non-zero
// priority under its default fcfs policy.
import { withFields } from '../util/objects.js';
import type { EngineKind } from './types.js';

/** The body's `priority` value carrying class `priority` to an engine of `kind`; undefined when the kind takes none. */
export function enginePriorityField(kind: EngineKind, priority: number): number | undefined {
  if (kind === 'vllm') return priority === 0 ? 0 : -priority;
  if (kind === 'sglang') return priority;
  return undefined;
}

/** The body's `priority` with the class `priority` added for an engine of `kind` (the body itself when the kind takes none). */
export function withEnginePriority(body: Record<string, unknown>, kind: EngineKind, priority: number): Record<string, unknown> {
  const value = enginePriorityField(kind, priority);
  return value === undefined ? body : withFields(body, { priority: value });
}

/**
 * The inverse for a simulated engine (vLLM's convention, lower first): the `priority` field an
 * engine of `kind` received, as the simulated scheduler orders it.
 */
export function lowerFirstPriority(kind: EngineKind, field: number): number {
  return kind === 'sglang' ? (field === 0 ? 0 : -field) : field;
}
