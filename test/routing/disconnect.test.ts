// PROTOCOLS.md 3a point 4: a client that disconnects after prefill must not strand the prefill
// worker's KV blocks. The fake vLLM prefill holds its blocks until a decode leg produced its first
// token (the fake decode "pulls" then), so a stranded hold is observable.
import { afterEach, describe, expect, it } from 'vitest';
import { isAbortError } from '../../src/engines/errors.js';
import { type Fleet, type FleetOptions, request, startFleet, until, zeroTotals } from './harness.js';

let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
});

async function start(o: Omit<FleetOptions, 'prefill' | 'decode'>): Promise<Fleet> {
  fleet = await startFleet({ prefill: 1, decode: 1, ...o });
  return fleet;
}

const body = (stream = true) => ({ model: 'fake', prompt: Array.from({ length: 16 }, (_, i) => i), max_tokens: 20, stream });

async function settled(f: Fleet) {
  await f.router.idle();
  expect(zeroTotals(f.prefillCore)).toBe(true);
  expect(zeroTotals(f.decodeCore)).toBe(true);
}

describe.each(['vllm', 'trtllm'] as const)('%s: client disconnect after prefill', (kind) => {
  it('leaving during the prefill aborts the prefill leg; nothing else runs', async () => {
    const f = await start({ kind, prefillBehaviour: { headerDelayMs: 300 } });
    const ac = new AbortController();
    const pending = f.router.handle(request({ body: body(), signal: ac.signal }));
    await until(() => f.prefillEngines[0].received.length === 1, 'the prefill leg');
    ac.abort();
    await expect(pending).rejects.toSatisfy(isAbortError);
    await until(() => f.prefillEngines[0].aborted.length === 1, 'the prefill engine to see the abort');
    expect(f.decodeEngines[0].received).toHaveLength(0);
    await settled(f);
  });

  it('leaving before the decode produced its first token keeps the decode leg until its KV pull, then closes it', async () => {
    const f = await start({ kind, decodeBehaviour: { tokenDelayMs: 300 } });
    const ac = new AbortController();
    const res = await f.router.handle(request({ body: body(), signal: ac.signal }));
    // The client leaves without reading anything: the decode's first token is 300 ms away.
    ac.abort();
    await res.stream![Symbol.asyncIterator]().return?.();
    expect(f.world.strandedHolds()).toHaveLength(1);
    await f.router.idle();
    expect(f.world.strandedHolds()).toEqual([]); // pulled by the decode leg
    await until(() => f.decodeEngines[0].aborted.length === 1, 'the decode leg to be closed after its first token');
    expect(f.router.decode.stats().released).toBe(1);
    await settled(f);
  });

  it('leaving while the decode leg is being sent: the request ends at once, the leg finishes its pull', async () => {
    const f = await start({ kind, decodeBehaviour: { headerDelayMs: 150, tokenDelayMs: 20 } });
    const ac = new AbortController();
    const pending = f.router.handle(request({ body: body(), signal: ac.signal }));
    await until(() => f.decodeEngines[0].received.length === 1, 'the decode leg');
    ac.abort();
    await expect(pending).rejects.toSatisfy(isAbortError);
    expect(f.world.strandedHolds()).toHaveLength(1);
    await f.router.idle();
    expect(f.world.strandedHolds()).toEqual([]);
    await settled(f);
  });

  it('leaving before the decode leg was sent: a one-token, non-streamed decode still pulls the blocks', async () => {
    const ac = new AbortController();
    let armed = false;
    // The decode core's clock is read when the decode leg is booked, right after the prefill
    // answered: the client leaves exactly there.
    const f = await start({
      kind,
      decodeClock: () => {
        if (armed) ac.abort();
        return Date.now();
      },
      prefillBehaviour: { beforeAnswer: () => void (armed = true) },
    });
    await expect(f.router.handle(request({ body: body(), signal: ac.signal }))).rejects.toSatisfy(isAbortError);
    await f.router.idle();
    const [dec] = f.decodeEngines[0].received;
    expect(dec.body).toMatchObject({ max_tokens: 1, stream: false });
    expect(dec.body).not.toHaveProperty('stream_options');
    expect(dec.body[kind === 'vllm' ? 'kv_transfer_params' : 'disaggregated_params']).toBeDefined();
    expect(f.world.strandedHolds()).toEqual([]);
    await settled(f);
  });

  it('a decode leg that never starts is given up after the release timeout', async () => {
    // The engine client would wait a minute for the answer: only the release timeout can end the leg.
    const f = await start({ kind, decodeBehaviour: { hang: true }, releaseTimeoutMs: 200, client: { firstByteTimeoutMs: 60_000 } });
    const ac = new AbortController();
    const pending = f.router.handle(request({ body: body(), signal: ac.signal }));
    await until(() => f.decodeEngines[0].received.length === 1, 'the decode leg');
    ac.abort();
    await expect(pending).rejects.toSatisfy(isAbortError);
    expect(zeroTotals(f.decodeCore)).toBe(false); // still booked while the leg runs on
    await f.router.idle();
    await until(() => f.decodeEngines[0].aborted.length === 1, 'the engine to see the close');
    await settled(f);
  });

  it('a non-streamed request whose client leaves mid-decode lets the decode finish in the background', async () => {
    const f = await start({ kind, decodeBehaviour: { tokenDelayMs: 10 } });
    const ac = new AbortController();
    const pending = f.router.handle(request({ body: body(false), signal: ac.signal }));
    await until(() => f.decodeEngines[0].received.length === 1, 'the decode leg');
    ac.abort();
    await expect(pending).rejects.toSatisfy(isAbortError);
    await f.router.idle();
    expect(f.world.strandedHolds()).toEqual([]);
    expect(f.decodeEngines[0].aborted).toHaveLength(0); // it completed
    await settled(f);
  });
});
