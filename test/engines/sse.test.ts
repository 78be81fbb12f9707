import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SseParseError, SseParser, isDone, makeEvent, parseSseText } from '../../src/engines/sse.js';
import type { SseEvent } from '../../src/engines/types.js';

const enc = (s: string) => new TextEncoder().encode(s);
/** What an event says (its payload, and the parse of it when it is JSON). */
const said = (e: SseEvent) => ({ data: e.data, json: e.json });
const allSaid = (events: SseEvent[]) => events.map(said);

describe('SseParser', () => {
  it('keeps each payload verbatim and parses JSON payloads', () => {
    const events = parseSseText('data: {"a": 1,  "b":[2]}\n\ndata: [DONE]\n\n');
    expect(events.map((e) => e.data)).toEqual(['{"a": 1,  "b":[2]}', '[DONE]']);
    expect(events[0].json).toEqual({ a: 1, b: [2] });
    expect(events[1].json).toBeUndefined();
    expect(isDone(events[1])).toBe(true);
  });

  it('accepts \\r\\n, \\r and \\n line ends, split anywhere across chunks', () => {
    const text = 'data: one\r\n\r\ndata: two\r\rdata: three\n\n';
    const bytes = enc(text);
    for (let cut = 1; cut < bytes.length; cut++) {
      const p = new SseParser();
      const events = [...p.push(bytes.subarray(0, cut)), ...p.push(bytes.subarray(cut)), ...p.end()];
      expect(
        events.map((e) => e.data),
        `cut at ${cut}`,
      ).toEqual(['one', 'two', 'three']);
    }
  });

  it('decodes multi-byte UTF-8 split across chunks', () => {
    const bytes = enc('data: {"t":"héllo ✓"}\n\n');
    const p = new SseParser();
    const events = [];
    for (const b of bytes) events.push(...p.push(Uint8Array.of(b)));
    expect(allSaid(events)).toEqual([{ data: '{"t":"héllo ✓"}', json: { t: 'héllo ✓' } }]);
  });

  it('decodes like a streaming TextDecoder wherever chunks split, invalid bytes included', () => {
    const text = enc('data: {"t":"a"}\n\ndata: {"t":"é✓😀"}\n\ndata: ascii again\n\n');
    const bytes = new Uint8Array([...text, ...enc('data: bad '), 0xff, 0xc3, ...enc('\n\n')]);
    const whole = new TextDecoder()
      .decode(bytes)
      .split('\n\n')
      .filter(Boolean)
      .map((line) => line.slice(6));
    for (let a = 1; a < bytes.length; a += 3) {
      for (let b = a + 1; b < bytes.length; b += 5) {
        const p = new SseParser();
        const events = [...p.push(bytes.subarray(0, a)), ...p.push(bytes.subarray(a, b)), ...p.push(bytes.subarray(b)), ...p.end()];
        expect(
          events.map((e) => e.data),
          `cuts at ${a}, ${b}`,
        ).toEqual(whole);
      }
    }
  });

  it('reads any stream of events, fields, comments and line ends, however it is chunked', () => {
    const lineText = fc.string({ unit: fc.constantFrom('a', 'b', ' ', ':', 'é', '{', '}'), maxLength: 8 });
    const field: fc.Arbitrary<{ data?: string; text: string }> = fc.oneof(
      lineText.map((v) => ({ data: v, text: `data: ${v}` })),
      lineText.map((v) => ({ data: v.startsWith(' ') ? v.slice(1) : v, text: `data:${v}` })), // one leading space is dropped
      fc.constant({ data: '', text: 'data' }),
      lineText.map((v) => ({ text: `:${v}` })),
      fc.constantFrom('event: x', 'id: 7', 'retry: 10', 'dataX: no', 'datum: no').map((text) => ({ text })),
    );
    const event = fc.array(field, { minLength: 1, maxLength: 4 });
    fc.assert(
      fc.property(fc.array(event, { maxLength: 5 }), fc.constantFrom('\n', '\r\n', '\r'), fc.array(fc.nat(), { maxLength: 4 }), (evs, eol, cuts) => {
        const text = evs.map((ev) => ev.map((f) => f.text + eol).join('') + eol).join('');
        const expected = evs
          .map((ev) => ev.filter((f) => f.data !== undefined).map((f) => f.data))
          .filter((d) => d.length > 0)
          .map((d) => d.join('\n'));
        const bytes = enc(text);
        const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        const p = new SseParser();
        const got: string[] = [];
        let at = 0;
        for (const c of [...points, bytes.length]) {
          got.push(...p.push(bytes.subarray(at, c)).map((e) => e.data));
          at = c;
        }
        got.push(...p.end().map((e) => e.data));
        expect(got).toEqual(expected);
      }),
      { numRuns: 1000 },
    );
  });

  it('joins multi-line data with \\n, skips comments and other fields, takes data without a space', () => {
    const events = parseSseText(': keep-alive\nevent: message\nid: 7\ndata:first\ndata: second\nretry: 10\n\n');
    expect(allSaid(events)).toEqual([{ data: 'first\nsecond' }]);
  });

  it('dispatches nothing for a blank line without data', () => {
    expect(parseSseText('\n\n: comment\n\n')).toEqual([]);
  });

  it('at the end, dispatches complete data lines but drops a truncated last line', () => {
    const p = new SseParser();
    expect(p.push(enc('data: a\n'))).toEqual([]);
    expect(allSaid(p.end())).toEqual([{ data: 'a' }]);
    const q = new SseParser();
    q.push(enc('data: {"trunc'));
    expect(q.end()).toEqual([]);
  });

  it('keeps non-JSON payloads as text and never throws on bad JSON', () => {
    expect(said(makeEvent('{not json'))).toEqual({ data: '{not json' });
    expect(said(makeEvent('hello'))).toEqual({ data: 'hello' });
  });

  it('refuses an event that grows past the limit', () => {
    const p = new SseParser(16);
    expect(() => p.push(enc('data: 0123456789\ndata: 0123456789\n'))).toThrow(SseParseError);
    const q = new SseParser(16);
    expect(() => q.push(enc('data: 0123456789012345678901234'))).toThrow(/exceeded 16/);
  });

  it('refuses use after end', () => {
    const p = new SseParser();
    p.end();
    expect(() => p.push(enc('data: x\n\n'))).toThrow(SseParseError);
    expect(p.end()).toEqual([]);
  });
});
