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

  it('keeps its own copy: the chunk reused by the frontend, other bodies copied after it, large bodies too', () => {
    const chunk = new Uint8Array(6000).fill(7);
    const a = new BoundedBodyBuffer(1 << 20);
    a.push(chunk.buffer);
    chunk.fill(9); // uWS hands out the same memory for the next chunk
    const b = new BoundedBodyBuffer(1 << 20);
    b.push(chunk.buffer);
    b.push(new Uint8Array(40_000).fill(3).buffer); // over the slab's pooled size: a buffer of its own
    expect(a.bytes().every((x) => x === 7)).toBe(true);
    expect(a.bytes().byteLength).toBe(6000);
    const bb = b.bytes();
    expect(bb.byteLength).toBe(46_000);
    expect(bb.subarray(0, 6000).every((x) => x === 9) && bb.subarray(6000).every((x) => x === 3)).toBe(true);
    expect(a.bytes().every((x) => x === 7)).toBe(true); // b's copies did not land on a's bytes
  });
});
