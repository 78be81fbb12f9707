// vLLM with the NIXL connector (PROTOCOLS.md 3a): prefill with do_remote_decode, read the
// kv_transfer_params the prefill returns, hand them to decode; a null kv_transfer_params means the
// prefill already finished the request (EOS) and is the client's answer.
import { transportError } from '../errors.js';
import { expectCompletion, isPlainObject, oneTokenPrefill } from './common.js';
import { promptTokensDetailsOf } from '../usage.js';
import type { Body, PrefillOutcome, SequentialHandoff } from './types.js';
import { copyFields, withFields } from '../../util/objects.js';

/** What the prefill leg asks for: "compute, keep the blocks for a remote decode". */
export function remoteDecodeParams(): Record<string, unknown> {
  return {
    do_remote_decode: true,
    do_remote_prefill: false,
    remote_engine_id: null,
    remote_block_ids: null,
    remote_host: null,
    remote_port: null,
  };
}

export const vllmHandoff: SequentialHandoff = {
  kind: 'vllm',
  mode: 'sequential',

  prefillBody(client: Body): Body {
    return withFields(oneTokenPrefill(client), { kv_transfer_params: remoteDecodeParams() });
  },

  interpretPrefill(result: unknown, engine: string): PrefillOutcome {
    const answer = expectCompletion(result, engine, 'vLLM prefill');
    const params = answer.kv_transfer_params;
    if (isPlainObject(params)) {
      return { kind: 'handoff', params, promptTokensDetails: promptTokensDetailsOf(answer) };
    }
    if (params !== null && params !== undefined) {
      throw transportError('engine_bad_response', engine, 'the vLLM prefill answer has a kv_transfer_params that is not an object');
    }
    if (answer.choices[0].finish_reason === 'length') {
      // Stopped on the one-token cap yet nothing to hand off: the engine is not a NIXL prefill worker.
      throw transportError(
        'engine_bad_response',
        engine,
        'the vLLM prefill answer has no kv_transfer_params (is the worker started with a NIXL kv-transfer config?)',
      );
    }
    const response: Body = copyFields(answer);
    delete response.kv_transfer_params;
    return { kind: 'finished', response };
  },

  decodeBody(client: Body, outcome): Body {
    return withFields(client, { kv_transfer_params: outcome.params });
  },
};
