// TensorRT-LLM (PROTOCOLS.md 3c): a context_only leg returns choices[0].disaggregated_params (the
// context request id and an opaque state), which the generation_only leg carries back. A context
// leg that already finished (finish_reason other than "length") is the client's answer.
import { transportError } from '../errors.js';
import { expectCompletion, isPlainObject, oneTokenPrefill } from './common.js';
import { promptTokensDetailsOf } from '../usage.js';
import type { Body, PrefillOutcome, SequentialHandoff } from './types.js';
import { copyFields, withFields } from '../../util/objects.js';

export const trtllmHandoff: SequentialHandoff = {
  kind: 'trtllm',
  mode: 'sequential',

  prefillBody(client: Body): Body {
    return withFields(oneTokenPrefill(client), { disaggregated_params: { request_type: 'context_only' } });
  },

  interpretPrefill(result: unknown, engine: string): PrefillOutcome {
    const answer = expectCompletion(result, engine, 'TensorRT-LLM context');
    const choice = answer.choices[0];
    if (choice.finish_reason !== 'length') {
      const response: Body = withFields(answer, { choices: answer.choices.map(stripDisaggregated) });
      return { kind: 'finished', response };
    }
    const params = choice.disaggregated_params;
    if (!isPlainObject(params)) {
      throw transportError('engine_bad_response', engine, 'the TensorRT-LLM context answer has no choices[0].disaggregated_params');
    }
    return { kind: 'handoff', params, promptTokensDetails: promptTokensDetailsOf(answer) };
  },

  decodeBody(client: Body, outcome): Body {
    return withFields(client, { disaggregated_params: withFields(outcome.params, { request_type: 'generation_only' }) });
  },
};

function stripDisaggregated(choice: Body): Body {
  if (!('disaggregated_params' in choice)) return choice;
  const copy = copyFields(choice);
  delete copy.disaggregated_params;
  return copy;
}
