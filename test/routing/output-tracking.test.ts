// Output block tracking: with it on, a streamed request's booking grows into the blocks its output
// fills; an expected output length (the expected_output_tokens hint) makes them weigh less as it
// nears that length. Off, the decode load is the prompt's blocks only.
import { afterEach, describe, expect, it } from 'vitest';
import { BLOCK, type Fleet, request, startFleet, zeroTotals } from './harness.js';
import type { RoutingHints } from '../../src/routing/hints.js';

let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
});

const PROMPT = 16;
const OUTPUT = 12;

/** Streams one request, sampling the decode pool's booked decode blocks after each event. */
async function decodeBlocksWhileStreaming(f: Fleet, hints: RoutingHints = {}): Promise<number[]> {
  const tokens = Uint32Array.from({ length: PROMPT }, (_, i) => i + 1);
  const res = await f.router.handle(request({ tokens, hints, body: { model: 'fake', prompt: [...tokens], max_tokens: OUTPUT, stream: true } }));
  const seen: number[] = [];
  for await (const _ of res.stream!) seen.push(f.decodeCore.load().reduce((n, l) => n + l.decodeBlocks, 0));
  return seen;
}

describe('output block tracking', () => {
  it('off: the booking holds the prompt blocks only', async () => {
    fleet = await startFleet({ kind: 'vllm', prefill: 0, decode: 1 });
    const seen = await decodeBlocksWhileStreaming(fleet);
    expect(Math.max(...seen.slice(0, -1))).toBe(PROMPT / BLOCK);
    expect(zeroTotals(fleet.decodeCore)).toBe(true);
  });

  it('on: the booking grows a block each time the output fills one, and is freed whole', async () => {
    fleet = await startFleet({ kind: 'vllm', prefill: 0, decode: 1, trackOutputBlocks: true });
    // An expected length far beyond the output keeps the weight at about 1 (max_tokens would be the expectation otherwise).
    const seen = await decodeBlocksWhileStreaming(fleet, { expectedOutputTokens: 1_000_000 });
    expect(Math.max(...seen)).toBeCloseTo((PROMPT + OUTPUT) / BLOCK, 1);
    expect(zeroTotals(fleet.decodeCore)).toBe(true);
  });

  it('with an expected output length, the blocks weigh less as the output nears it', async () => {
    fleet = await startFleet({ kind: 'vllm', prefill: 0, decode: 1, trackOutputBlocks: true });
    const seen = await decodeBlocksWhileStreaming(fleet, { expectedOutputTokens: OUTPUT });
    // After the first token 11/12 of the prompt's 4 blocks; after the last, nothing left to grow into.
    expect(seen[0]).toBeCloseTo(((OUTPUT - 1) / OUTPUT) * (PROMPT / BLOCK), 2);
    expect(seen.at(-2)).toBe(0);
    expect(zeroTotals(fleet.decodeCore)).toBe(true);
  });
});
