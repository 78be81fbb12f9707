import { describe, expect, it } from 'vitest';
import { checkEcho, dynamoRunCommand, type DynamoReplayRun } from '../../../../bench/peers/replay/peer.js';
import { checkReplaySetting, REPLAY_SETTINGS, settingLabel } from '../../../../bench/peers/replay/settings.js';

describe('the replay settings', () => {
  it("are Dynamo's mocker default and vLLM's block size, with the same tokens of cache", () => {
    expect(REPLAY_SETTINGS).toEqual([
      { blockSize: 64, kvBlocks: 16_384 },
      { blockSize: 16, kvBlocks: 65_536 },
    ]);
    expect(new Set(REPLAY_SETTINGS.map((s) => s.blockSize * s.kvBlocks)).size).toBe(1);
    expect(settingLabel(REPLAY_SETTINGS[0])).toBe('64-token blocks x 16,384');
  });

  it('refuses settings that one of the simulators cannot run on the traces', () => {
    expect(checkReplaySetting({ blockSize: 512, kvBlocks: 1 })).toEqual({ blockSize: 512, kvBlocks: 1 });
    expect(() => checkReplaySetting({ blockSize: 48, kvBlocks: 1024 })).toThrow(/divide the traces' 512-token blocks/);
    expect(() => checkReplaySetting({ blockSize: 0, kvBlocks: 1024 })).toThrow(RangeError);
    expect(() => checkReplaySetting({ blockSize: 16, kvBlocks: -1 })).toThrow(RangeError);
    expect(() => checkReplaySetting({ blockSize: 16, kvBlocks: 2 ** 31 })).toThrow(RangeError);
    expect(() => checkReplaySetting({ blockSize: 16.5, kvBlocks: 1024 })).toThrow(TypeError);
    expect(() => checkReplaySetting({ blockSize: 16, kvBlocks: Number.NaN })).toThrow(TypeError);
    expect(() => checkReplaySetting({ blockSize: '16' as unknown as number, kvBlocks: 1024 })).toThrow(TypeError);
  });
});

describe("the driver's run command", () => {
  it('names the router mode and the setting', () => {
    expect(dynamoRunCommand('kv_router', { blockSize: 16, kvBlocks: 65_536 })).toBe('run kv_router 16 65536');
    expect(dynamoRunCommand('round_robin', { blockSize: 64, kvBlocks: 16_384 })).toBe('run round_robin 64 16384');
    expect(() => dynamoRunCommand('kv' as 'kv_router', { blockSize: 16, kvBlocks: 1 })).toThrow(RangeError);
    expect(() => dynamoRunCommand('kv_router', { blockSize: 3, kvBlocks: 1 })).toThrow(RangeError);
  });

  it('refuses a replay whose echoed engine config is not the one asked for', () => {
    const reply = { type: 'run', block_size: 64, num_gpu_blocks: 16_384 } as DynamoReplayRun;
    expect(checkEcho(reply, { blockSize: 64, kvBlocks: 16_384 })).toBe(reply);
    expect(() => checkEcho(reply, { blockSize: 16, kvBlocks: 65_536 })).toThrow(/ran 64-token blocks x 16384, not the 16 x 65536/);
    expect(() => checkEcho(reply, { blockSize: 64, kvBlocks: 8_192 })).toThrow(/not the 64 x 8192/);
  });
});
