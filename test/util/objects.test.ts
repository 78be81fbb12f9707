import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { copyFields, withFields } from '../../src/util/objects.js';

describe('copyFields / withFields', () => {
  it('copy own enumerable properties, string and symbol keys, as spread does', () => {
    const sym = Symbol('s');
    const hidden = Symbol('hidden');
    const base: Record<string | symbol, unknown> = { a: 1, b: { nested: true }, [sym]: 'x' };
    Object.defineProperty(base, hidden, { value: 'not copied', enumerable: false });
    const copy = copyFields(base);
    expect(copy).not.toBe(base);
    expect(copy).toEqual({ ...base });
    expect(copy[sym]).toBe('x');
    expect(copy[hidden]).toBeUndefined();
    expect(copy.b).toBe(base.b); // shallow
    const inherited = Object.create({ fromProto: 1 }) as Record<string, unknown>;
    inherited.own = 2;
    expect(copyFields(inherited)).toEqual({ own: 2 });
  });

  it('put extra on top, in the order spread gives', () => {
    const base = { a: 1, b: 2 };
    const out = withFields(base, { b: 3, c: 4 });
    expect(out).toEqual({ a: 1, b: 3, c: 4 });
    expect(Object.keys(out)).toEqual(Object.keys({ ...base, ...{ b: 3, c: 4 } }));
    expect(base).toEqual({ a: 1, b: 2 }); // the base is not touched
    expect(withFields(base, { b: 3 }, { b: 4, d: 5 })).toEqual({ a: 1, b: 4, d: 5 });
  });

  it("keep a JSON '__proto__' key an own property and the prototype Object.prototype", () => {
    const parsed = JSON.parse('{"model":"m","__proto__":{"polluted":true}}') as Record<string, unknown>;
    for (const copy of [copyFields(parsed), withFields(parsed, { extra: 1 }), withFields({ a: 1 }, parsed)]) {
      expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
      expect(Object.hasOwn(copy, '__proto__')).toBe(true);
      expect((copy as Record<string, unknown>).polluted).toBeUndefined();
      expect(JSON.parse(JSON.stringify(copy))).toEqual(JSON.parse(JSON.stringify({ ...parsed, ...copy })));
    }
    expect(JSON.stringify(copyFields(parsed))).toContain('"__proto__":{"polluted":true}');
  });
});

describe('request-path modules', () => {
  // The reason for copyFields/withFields (see src/util/objects.ts): a spread followed by more
  // fields on one line, in the modules a request passes through, is the pattern to keep out.
  it('build no object by spread followed by more fields', () => {
    const root = fileURLToPath(new URL('../../src/', import.meta.url));
    const offenders: string[] = [];
    for (const dir of ['server', 'routing', 'engines']) {
      for (const file of readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })) {
        if (!file.endsWith('.ts')) continue;
        readFileSync(join(root, dir, file), 'utf8')
          .split('\n')
          .forEach((line, i) => {
            if (/^\s*(\/\/|\*)/.test(line)) return; // comments
            if (/\{\s*\.\.\.[^{}]*?,\s*[\w'"[.]/.test(line)) offenders.push(`${dir}/${file}:${i + 1}: ${line.trim()}`);
          });
      }
    }
    expect(offenders).toEqual([]);
  });
});
