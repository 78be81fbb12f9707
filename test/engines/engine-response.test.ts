import { describe, expect, it } from 'vitest';
import type { Dispatcher } from 'undici';
import { ResponseBody } from '../../src/engines/engine-response.js';

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
