import { describe, expect, it } from 'vitest';
import { completionAsEvents } from '../../src/engines/completion-events.js';
import { EngineError } from '../../src/engines/errors.js';
import { handoffFor, sglangHandoff, trtllmHandoff, vllmHandoff } from '../../src/engines/handoff/index.js';

const client = {
  model: 'm',
  prompt: [1, 2, 3],
  stream: true,
  stream_options: { include_usage: true },
  max_tokens: 50,
  min_tokens: 5,
  temperature: 0,
};

describe('vLLM NIXL adapter (PROTOCOLS.md 3a)', () => {
  it('builds the prefill leg: one token, not streamed, do_remote_decode', () => {
    const body = vllmHandoff.prefillBody(client);
    expect(body).toEqual({
      model: 'm',
      prompt: [1, 2, 3],
      stream: false,
      max_tokens: 1,
      temperature: 0,
      kv_transfer_params: {
        do_remote_decode: true,
        do_remote_prefill: false,
        remote_engine_id: null,
        remote_block_ids: null,
        remote_host: null,
        remote_port: null,
      },
    });
    expect(client.stream_options).toEqual({ include_usage: true }); // the client's body is untouched
    expect(vllmHandoff.prefillBody({ ...client, max_completion_tokens: 9 }).max_completion_tokens).toBe(1);
    expect('max_completion_tokens' in body).toBe(false);
  });

  it('hands kv_transfer_params and the prefill cache details to the decode leg', () => {
    const params = {
      do_remote_prefill: true,
      remote_block_ids: [1],
      remote_engine_id: 'e',
      remote_request_id: 'r',
      remote_host: 'h',
      remote_port: 1,
      tp_size: 1,
    };
    const outcome = vllmHandoff.interpretPrefill(
      {
        id: 'x',
        choices: [{ text: 'a', finish_reason: 'length' }],
        usage: { prompt_tokens: 3, prompt_tokens_details: { cached_tokens: 2 } },
        kv_transfer_params: params,
      },
      'e',
    );
    expect(outcome).toEqual({ kind: 'handoff', params, promptTokensDetails: { cached_tokens: 2 } });
    if (outcome.kind !== 'handoff') throw new Error('unreachable');
    expect(vllmHandoff.decodeBody(client, outcome)).toEqual({ ...client, kv_transfer_params: params });
  });

  it('a null kv_transfer_params with EOS is the finished answer, without the field', () => {
    const answer = { id: 'x', choices: [{ text: 'a', finish_reason: 'stop' }], kv_transfer_params: null };
    expect(vllmHandoff.interpretPrefill(answer, 'e')).toEqual({ kind: 'finished', response: { id: 'x', choices: [{ text: 'a', finish_reason: 'stop' }] } });
  });

  it('refuses answers that break the protocol', () => {
    expect(() => vllmHandoff.interpretPrefill({ choices: [{ finish_reason: 'length' }] }, 'e')).toThrow(/kv_transfer_params/);
    expect(() => vllmHandoff.interpretPrefill({ choices: [{ finish_reason: 'length' }], kv_transfer_params: 5 }, 'e')).toThrow(EngineError);
    expect(() => vllmHandoff.interpretPrefill({ choices: [] }, 'e')).toThrow(/no choices/);
    expect(() => vllmHandoff.interpretPrefill('nope', 'e')).toThrow(/not a JSON object/);
    expect(() => vllmHandoff.interpretPrefill(null, 'http://e')).toThrow(
      expect.objectContaining({ status: 502, failure: 'engine_bad_response', engine: 'http://e' }),
    );
  });
});

describe('TensorRT-LLM adapter (PROTOCOLS.md 3c)', () => {
  it('builds the context leg and the generation leg', () => {
    const body = trtllmHandoff.prefillBody(client);
    expect(body).toMatchObject({ stream: false, max_tokens: 1, disaggregated_params: { request_type: 'context_only' } });
    expect('stream_options' in body || 'min_tokens' in body).toBe(false);
    const dp = { request_type: 'context_only', ctx_request_id: 4, encoded_opaque_state: 'b64', first_gen_tokens: [9] };
    const outcome = trtllmHandoff.interpretPrefill(
      { choices: [{ finish_reason: 'length', disaggregated_params: dp }], usage: { prompt_tokens_details: { cached_tokens: 1 } } },
      'e',
    );
    expect(outcome).toEqual({ kind: 'handoff', params: dp, promptTokensDetails: { cached_tokens: 1 } });
    if (outcome.kind !== 'handoff') throw new Error('unreachable');
    expect(trtllmHandoff.decodeBody(client, outcome)).toEqual({ ...client, disaggregated_params: { ...dp, request_type: 'generation_only' } });
  });

  it('a context leg that finished is the answer; a length stop without params is refused', () => {
    const r = trtllmHandoff.interpretPrefill({ choices: [{ finish_reason: 'stop', text: 'x', disaggregated_params: { a: 1 } }] }, 'e');
    expect(r).toEqual({ kind: 'finished', response: { choices: [{ finish_reason: 'stop', text: 'x' }] } });
    expect(() => trtllmHandoff.interpretPrefill({ choices: [{ finish_reason: 'length' }] }, 'e')).toThrow(/disaggregated_params/);
  });
});

describe('SGLang bootstrap adapter (PROTOCOLS.md 3b)', () => {
  const max = (1n << 63n) - 1n;
  it('adds host, port and room to both legs; the prefill leg is drained as one JSON answer', () => {
    const b = { host: '10.0.0.1', port: 8998, room: max };
    expect(sglangHandoff.decodeBody(client, b)).toEqual({ ...client, bootstrap_host: '10.0.0.1', bootstrap_port: 8998, bootstrap_room: max });
    const p = sglangHandoff.prefillBody(client, b);
    expect(p).toMatchObject({ bootstrap_room: max, stream: false, max_tokens: 50 });
    expect('stream_options' in p).toBe(false);
  });

  it('gives a batched prompt one room per item', () => {
    let next = 0n;
    const make = () => ++next;
    expect(sglangHandoff.rooms(client, make)).toBe(1n);
    expect(sglangHandoff.rooms({ prompt: [[1], [2], [3]] }, make)).toEqual([2n, 3n, 4n]);
    expect(sglangHandoff.rooms({ prompt: ['a'] }, make)).toEqual([5n]);
    expect(sglangHandoff.rooms({ messages: [] }, make)).toBe(6n);
    const body = sglangHandoff.decodeBody({ prompt: [[1], [2]] }, { host: 'h', port: 1, room: [1n, 2n] });
    expect(body.bootstrap_room).toEqual([1n, 2n]);
    expect(() => sglangHandoff.decodeBody({ prompt: [[1], [2]] }, { host: 'h', port: 1, room: 1n })).toThrow(/2 rooms/);
    expect(() => sglangHandoff.decodeBody(client, { host: 'h', port: 1, room: [1n] })).toThrow(/one room/);
  });

  it('reads the drained prefill usage details', () => {
    expect(sglangHandoff.promptTokensDetails({ usage: { prompt_tokens_details: { cached_tokens: 7 } } })).toEqual({ cached_tokens: 7 });
    expect(sglangHandoff.promptTokensDetails({ usage: null })).toBeUndefined();
    expect(sglangHandoff.promptTokensDetails('x')).toBeUndefined();
  });
});

describe('handoffFor', () => {
  it('maps each kind and refuses others', () => {
    expect(handoffFor('vllm').mode).toBe('sequential');
    expect(handoffFor('trtllm').mode).toBe('sequential');
    expect(handoffFor('sglang').mode).toBe('bootstrap');
    expect(() => handoffFor('tgi' as never)).toThrow(TypeError);
    expect(() => handoffFor('toString' as never)).toThrow(TypeError);
  });
});

describe('completionAsEvents', () => {
  it('retells a completion as one chunk, the usage chunk and [DONE]', () => {
    const answer = {
      id: 'cmpl-1',
      created: 1,
      model: 'm',
      object: 'text_completion',
      choices: [{ index: 0, text: 'hi', finish_reason: 'stop', logprobs: null }],
      usage: { prompt_tokens: 3 },
    };
    const events = completionAsEvents('/v1/completions', answer, true);
    expect(events.map((e) => e.data)).toEqual([
      '{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"hi","logprobs":null,"finish_reason":"stop"}]}',
      '{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3}}',
      '[DONE]',
    ]);
    expect(completionAsEvents('/v1/completions', answer, false)).toHaveLength(2);
  });

  it('retells a chat completion as a delta', () => {
    const answer = { id: 'c', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'yo' }, finish_reason: 'stop' }] };
    const [first] = completionAsEvents('/v1/chat/completions', answer, true);
    expect(first.json).toEqual({
      id: 'c',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm',
      choices: [{ index: 0, delta: { role: 'assistant', content: 'yo' }, logprobs: null, finish_reason: 'stop' }],
    });
  });
});
