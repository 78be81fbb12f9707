// Body edits and answer readings that several handoff adapters share.
import { transportError } from '../errors.js';
import type { Body } from './types.js';
import { withFields } from '../../util/objects.js';

/**
 * The client's body made into a one-token, non-streamed prefill: max_tokens 1 (and
 * max_completion_tokens 1 when the client used it), stream false, no stream_options, no
 * min_tokens (a floor above the cap would be refused). The client's body is not modified.
 */
export function oneTokenPrefill(client: Body): Body {
  const body: Body = withFields(client, { stream: false, max_tokens: 1 });
  if ('max_completion_tokens' in client) body.max_completion_tokens = 1;
  delete body.stream_options;
  delete body.min_tokens;
  return body;
}

/** The answer as an object with a non-empty choices array, or an engine_bad_response error. */
export function expectCompletion(result: unknown, engine: string, leg: string): Body & { choices: Body[] } {
  if (!isPlainObject(result)) throw transportError('engine_bad_response', engine, `the ${leg} answer is not a JSON object`);
  const choices = result.choices;
  if (!Array.isArray(choices) || choices.length === 0 || !choices.every(isPlainObject)) {
    throw transportError('engine_bad_response', engine, `the ${leg} answer has no choices`);
  }
  return result as Body & { choices: Body[] };
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
