import { describe, expect, it } from 'vitest';
import { BoundedBodyBuffer, collectBody } from '../../../src/server/call/body.js';
import { HttpError } from '../../../src/server/call/errors.js';

async function* chunks(...parts: string[]) {
  for (const p of parts) yield Buffer.from(p);
}

describe('collectBody', () => {
  it('collects a stream and a buffer within the limit', async () => {
    expect(Buffer.from(await collectBody(chunks('ab', 'cd'), 4)).toString()).toBe('abcd');
    expect(Buffer.from(await collectBody(Buffer.from('xy'), 4)).toString()).toBe('xy');
    expect((await collectBody(undefined, 4)).byteLength).toBe(0);
  });

  it('refuses with 413 as soon as the limit is passed, without reading the rest', async () => {
    let pulled = 0;
    async function* endless() {
      for (;;) {
        pulled++;
        yield Buffer.alloc(10);
      }
    }
    await expect(collectBody(endless(), 25)).rejects.toSatisfy((e: unknown) => e instanceof HttpError && e.status === 413);
    expect(pulled).toBe(3);
    await expect(collectBody(Buffer.alloc(5), 4)).rejects.toThrow(/exceeds the router's limit of 4 bytes \(--max-body-bytes\)/);
    await expect(collectBody(chunks('a'), 4, '100')).rejects.toThrow(/exceeds/);
  });
});

describe('BoundedBodyBuffer', () => {
  it('copies pushed chunks and keeps at most limit + 1 bytes', () => {
    const b = new BoundedBodyBuffer(4);
    const ab = new TextEncoder().encode('abc').buffer as ArrayBuffer;
    expect(b.push(ab)).toBe(true);
    expect(b.push(ab)).toBe(false);
    expect(b.overLimit).toBe(true);
    expect(b.bytes().byteLength).toBe(5);
    expect(b.push(ab)).toBe(false);
    expect(b.bytes().byteLength).toBe(5);
  });
});
