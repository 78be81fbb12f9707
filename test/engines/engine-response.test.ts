import { describe, expect, it } from 'vitest';
import type { Dispatcher } from 'undici';
import { ResponseBody, ResponseHead } from '../../src/engines/engine-response.js';

class FakeController {
  paused = false;
  aborted = false;
  reason: Error | null = null;
  pauses = 0;
  resumes = 0;
  aborts: Error[] = [];
  pause() {
    this.paused = true;
    this.pauses++;
  }
  resume() {
    this.paused = false;
    this.resumes++;
  }
  abort(reason: Error) {
    this.aborted = true;
    this.aborts.push(reason);
  }
}

function body() {
  const c = new FakeController();
  return { c, b: new ResponseBody(c as unknown as Dispatcher.DispatchController) };
}

const kb = (n: number) => Buffer.alloc(n * 1024, 1);

describe('ResponseBody', () => {
  it('hands chunks over in order, waiting for the next one, then null at the end', async () => {
    const { b } = body();
    b.push(Buffer.from('a'));
    expect((await b.read())?.toString()).toBe('a');
    const pending = b.read();
    b.push(Buffer.from('b'));
    expect((await pending)?.toString()).toBe('b');
    b.end();
    expect(await b.read()).toBeNull();
    expect(await b.read()).toBeNull();
  });

  it('pauses the connection past 64 KiB unread and resumes once half of it is read', async () => {
    const { b, c } = body();
    for (let i = 0; i < 4; i++) b.push(kb(16));
    expect(c.pauses).toBe(0);
    b.push(kb(16)); // 80 KiB queued
    expect(c.paused).toBe(true);
    await b.read();
    await b.read(); // 48 KiB left
    expect(c.resumes).toBe(0);
    await b.read(); // 32 KiB left
    expect(c.paused).toBe(false);
    expect(c.resumes).toBe(1);
  });

  it('a transport failure rejects the pending and later reads', async () => {
    const { b } = body();
    const pending = b.read();
    b.fail(new Error('socket hang up'));
    await expect(pending).rejects.toThrow('socket hang up');
    await expect(b.read()).rejects.toThrow('socket hang up');
  });

  it('destroy() aborts an unfinished response once, drops what was queued and wakes the reader', async () => {
    const { b, c } = body();
    const pending = b.read();
    b.destroy();
    b.destroy();
    await expect(pending).rejects.toThrow(/destroyed/);
    expect(c.aborts.length).toBe(1);
    b.push(Buffer.from('late'));
    expect(await b.read()).toBeNull();
  });

  it('destroy() after the end leaves the connection alone (it returns to the pool)', () => {
    const { b, c } = body();
    b.end();
    b.destroy();
    expect(c.aborts.length).toBe(0);
  });

  it('refuses two concurrent readers', async () => {
    const { b } = body();
    const first = b.read();
    await expect(b.read()).rejects.toThrow(TypeError);
    b.end();
    expect(await first).toBeNull();
  });
});

describe('ResponseHead', () => {
  const raw = (...pairs: string[]) => pairs.map((p) => Buffer.from(p, 'latin1'));
  const head = (...pairs: string[]) => new ResponseHead(200, raw(...pairs), body().b);

  it('reads one header case-insensitively without parsing the rest, the first of a repeated one', () => {
    const h = head('Content-Type', 'text/event-stream', 'Set-Cookie', 'a=1', 'set-cookie', 'b=2');
    expect(h.header('content-type')).toBe('text/event-stream');
    expect(h.header('set-cookie')).toBe('a=1');
    expect(h.header('x-missing')).toBeUndefined();
  });

  it('parses every header on demand as undici did: lower-case names, latin1 values, repeats in an array', () => {
    const h = head('Content-Type', 'text/plain; charset=\xe9', 'X-A', '1', 'x-a', '2', 'x-a', '3', '__proto__', 'p');
    expect(h.headers['content-type']).toBe('text/plain; charset=\xe9');
    expect(h.headers['x-a']).toEqual(['1', '2', '3']);
    // biome-ignore lint/suspicious/noProto: a header named __proto__ is the case under test
    expect(h.headers.__proto__).toBe('p'); // a header, not the object's prototype
    expect(Object.keys(h.headers)).toEqual(['content-type', 'x-a', '__proto__']);
    expect(h.header('x-a')).toBe('1'); // from the parsed headers now
    expect(h.headers).toBe(h.headers); // parsed once
  });
});
