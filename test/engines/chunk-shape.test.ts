import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SHAPE_ERROR, SHAPE_TOKEN, SHAPE_USAGE, UNKNOWN_SHAPE, chunkShape } from '../../src/engines/chunk-shape.js';
import { carriesToken, makeEvent, shapeOf } from '../../src/engines/sse.js';

/** The shape a parse of the chunk gives: what the scan must agree with. */
function parsedShape(chunk: Record<string, unknown>): number {
  const { choices, usage, error } = chunk;
  return (
    (Array.isArray(choices) && choices.length > 0 ? SHAPE_TOKEN : 0) |
    (usage !== undefined && usage !== null ? SHAPE_USAGE : 0) |
    (error !== undefined && error !== null ? SHAPE_ERROR : 0)
  );
}

describe('chunkShape', () => {
  it('reads the chunks engines send', () => {
    expect(chunkShape('{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"x","finish_reason":null}]}')).toBe(
      SHAPE_TOKEN,
    );
    expect(chunkShape('{"id":"cmpl-1","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4}}')).toBe(SHAPE_USAGE);
    // Python's json.dumps spacing, and usage: null in every chunk (OpenAI with include_usage).
    expect(chunkShape('{"id": "c", "choices": [ {"index": 0, "text": "x"} ], "usage": null}')).toBe(SHAPE_TOKEN);
    expect(chunkShape('{"choices": [ ], "usage": null}')).toBe(0);
    expect(chunkShape('{"error":{"message":"out of memory","code":507}}')).toBe(SHAPE_ERROR);
    expect(chunkShape('{"error":null,"choices":[{"text":"a"}]}')).toBe(SHAPE_TOKEN);
  });

  it('counts only top-level keys, never a key-like string or a nested key', () => {
    expect(chunkShape('{"meta":{"choices":[1],"usage":{}},"choices":[]}')).toBe(0);
    expect(chunkShape('{"text":"choices","usage":"x"}')).toBe(SHAPE_USAGE);
    expect(chunkShape('{"choices":[{"text":"\\"choices\\":[1],\\"usage\\":{}"}]}')).toBe(SHAPE_TOKEN);
    expect(chunkShape('{"choices":[{"text":"ends with a backslash \\\\"}],"error":1}')).toBe(SHAPE_TOKEN | SHAPE_ERROR);
    expect(chunkShape('{"choices":"not an array"}')).toBe(0);
  });

  it('is UNKNOWN for what it cannot read: not an object, or cut short', () => {
    for (const text of ['[DONE]', 'hello', '', '  ', '[{"choices":[1]}]', '{"choices":[', '{"choices"', '{"a":"unterminated', '{"choices":[{"text":"a"}]']) {
      expect(chunkShape(text), text).toBe(UNKNOWN_SHAPE);
    }
  });

  it('agrees with a parse of any chunk (random objects, key orders and spacing)', () => {
    const value = fc.jsonValue({ maxDepth: 3 });
    const chunk = fc.record(
      {
        choices: fc.oneof(fc.constant([]), fc.array(value, { minLength: 1, maxLength: 3 }), value),
        usage: fc.oneof(fc.constant(null), value),
        error: fc.oneof(fc.constant(null), value),
      },
      { requiredKeys: [] },
    );
    const others = fc.dictionary(
      fc.string({ maxLength: 8 }).filter((k) => k !== '__proto__'),
      value,
      { maxKeys: 4 },
    );
    fc.assert(
      fc.property(chunk, others, fc.boolean(), fc.integer({ min: 0, max: 2 }), (c, rest, restFirst, indent) => {
        for (const k of ['choices', 'usage', 'error']) delete rest[k];
        const obj = restFirst ? Object.assign({}, rest, c) : Object.assign({}, c, rest);
        const text = JSON.stringify(obj, null, indent);
        expect(chunkShape(text)).toBe(parsedShape(JSON.parse(text) as Record<string, unknown>));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('event shapes', () => {
  it('an engine event is scanned once and parsed only when asked', () => {
    const ev = makeEvent('{"choices":[{"text":"a"}]}');
    expect(carriesToken(ev)).toBe(true);
    expect(shapeOf(ev)).toBe(SHAPE_TOKEN);
    expect(ev.json).toEqual({ choices: [{ text: 'a' }] });
  });

  it('falls back to the parse for what the scan cannot read', () => {
    expect(carriesToken(makeEvent('[DONE]'))).toBe(false);
    expect(carriesToken(makeEvent('not json'))).toBe(false);
    // A plain event (built by the router, or a test) is read from its text the same way.
    expect(carriesToken({ data: '{"choices":[{"text":"a"}],"usage":{"x":1}}' })).toBe(true);
    expect(shapeOf({ data: '{"choices":[],"usage":{"x":1}}' })).toBe(SHAPE_USAGE);
  });
});
