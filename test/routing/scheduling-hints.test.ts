import { describe, expect, it } from 'vitest';
import { InvalidRoutingHintError, parseRoutingHints } from '../../src/routing/hints.js';

describe('scheduling hints', () => {
  it('read priority, priority jump and expected output from headers', () => {
    expect(parseRoutingHints({ 'X-Kvroute-Priority': '3', 'x-kvroute-priority-jump': '1.5', 'x-kvroute-expected-output-tokens': '256' })).toEqual({
      priority: 3,
      priorityJump: 1.5,
      expectedOutputTokens: 256,
    });
    expect(parseRoutingHints({ 'x-kvroute-priority': '-2' })).toEqual({ priority: -2 });
  });

  it("read them from Dynamo's nvext places, and kvroute's aliases", () => {
    expect(parseRoutingHints({}, { agent_hints: { priority: 5, latency_sensitivity: 2, osl: 100, speculative_prefill: true } })).toEqual({
      priority: 5,
      priorityJump: 2,
      expectedOutputTokens: 100,
    });
    expect(parseRoutingHints({}, { priority_jump: 0.5, expected_output_tokens: 7 })).toEqual({ priorityJump: 0.5, expectedOutputTokens: 7 });
    // agent_hints.priority_jump comes before latency_sensitivity and nvext.priority_jump.
    expect(parseRoutingHints({}, { agent_hints: { priority_jump: 1, latency_sensitivity: 9 }, priority_jump: 8 })).toEqual({ priorityJump: 1 });
  });

  it('take a hint given both ways when they agree, and refuse it when they do not', () => {
    expect(parseRoutingHints({ 'x-kvroute-priority': '2' }, { agent_hints: { priority: 2 } })).toEqual({ priority: 2 });
    expect(() => parseRoutingHints({ 'x-kvroute-priority': '2' }, { agent_hints: { priority: 3 } })).toThrow(/disagrees with nvext.agent_hints.priority/);
    expect(() => parseRoutingHints({ 'x-kvroute-expected-output-tokens': '5' }, { expected_output_tokens: 6 })).toThrow(InvalidRoutingHintError);
  });

  it('refuse malformed values with a 400-style error naming the place', () => {
    const bad: Array<[Record<string, string>, unknown, RegExp]> = [
      [{ 'x-kvroute-priority': '101' }, undefined, /x-kvroute-priority must be an integer in \[-100, 100\]/],
      [{ 'x-kvroute-priority': '1.5' }, undefined, /integer/],
      [{}, { agent_hints: { priority: 'high' } }, /nvext.agent_hints.priority/],
      [{ 'x-kvroute-priority-jump': '-1' }, undefined, /priority-jump must be a number/],
      [{}, { agent_hints: { latency_sensitivity: 1e9 } }, /latency_sensitivity/],
      [{ 'x-kvroute-expected-output-tokens': '0' }, undefined, /expected-output-tokens/],
      [{}, { agent_hints: { osl: 3.5 } }, /osl/],
      [{}, { agent_hints: [] }, /nvext.agent_hints must be an object/],
    ];
    for (const [headers, nvext, message] of bad) {
      expect(() => parseRoutingHints(headers, nvext)).toThrow(message);
      expect(() => parseRoutingHints(headers, nvext)).toThrow(expect.objectContaining({ code: 'invalid_routing_hint' }));
    }
  });

  it("read Dynamo's session_control, or the same as headers", () => {
    expect(parseRoutingHints({}, { session_control: { session_id: 'sub-1', action: 'open', timeout: 60 } })).toEqual({
      sessionControl: { sessionId: 'sub-1', action: 'open', timeoutS: 60 },
    });
    expect(parseRoutingHints({}, { session_control: { session_id: 'sub-1' } })).toEqual({ sessionControl: { sessionId: 'sub-1' } });
    expect(parseRoutingHints({ 'x-kvroute-session-id': 's', 'x-kvroute-session-action': 'close' })).toEqual({
      sessionControl: { sessionId: 's', action: 'close' },
    });
    // Both ways, agreeing: one hint.
    expect(parseRoutingHints({ 'x-kvroute-session-id': 's' }, { session_control: { session_id: 's', action: 'close' } })).toEqual({
      sessionControl: { sessionId: 's', action: 'close' },
    });
  });

  it('refuse a malformed session control', () => {
    const bad: Array<[Record<string, string>, unknown, RegExp]> = [
      [{}, { session_control: {} }, /session_id is required/],
      [{}, { session_control: { session_id: 'a b' } }, /visible ASCII/],
      [{}, { session_control: { session_id: 's', action: 'bind' } }, /'open' or 'close'/],
      [{}, { session_control: { session_id: 's', action: 'open', timeout: 0 } }, /timeout must be an integer/],
      [{}, { session_control: { session_id: 's', timeout: 5 } }, /timeout goes with action 'open'/],
      [{}, { session_control: { session_id: 's', extra: 1 } }, /unknown field 'extra'/],
      [{}, { session_control: 'sub-1' }, /must be an object/],
      [{ 'x-kvroute-session-action': 'open' }, undefined, /needs a session id/],
      [{ 'x-kvroute-session-id': 'a' }, { session_control: { session_id: 'b' } }, /disagrees/],
    ];
    for (const [headers, nvext, message] of bad) expect(() => parseRoutingHints(headers, nvext)).toThrow(message);
  });
});
