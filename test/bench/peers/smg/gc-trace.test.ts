import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { formatStretch, GcTrace } from '../../../../bench/peers/smg/gc-trace.js';

const scavenge = (pause: number, survived: number, promoted: number) =>
  `[1:0x1]  19 ms: pause=${pause} mutator=1.0 gc=s reduce_memory=0 scavenge=1.0 new_space_survived=${survived} promoted=${promoted} promotion_ratio=1.0%\n`;
const markCompact = '[1:0x1]  50 ms: pause=9.0 mutator=1.0 gc=mc reduce_memory=0 promoted=0\n';

describe('GcTrace', () => {
  let dir: string | undefined;
  afterEach(() => dir && rmSync(dir, { recursive: true, force: true }));

  it('reads the stretch traced since the previous call: counts, and medians per scavenge in KB', () => {
    dir = mkdtempSync(join(tmpdir(), 'gc-trace-'));
    const file = join(dir, 'trace.nvp');
    writeFileSync(file, `some other output\n${scavenge(1, 1024, 2048)}${scavenge(3, 3072, 4096)}${scavenge(2, 2048, 1024)}${markCompact}`);
    const trace = new GcTrace(file);
    expect(trace.next()).toEqual({ scavenges: 3, markCompacts: 1, survivedKb: 2, promotedKb: 2, scavengeMs: 2 });
    // A line still being written waits for its end.
    appendFileSync(file, scavenge(4, 10240, 0) + scavenge(6, 20480, 0).slice(0, 30));
    expect(trace.next()).toMatchObject({ scavenges: 1, markCompacts: 0, survivedKb: 10, promotedKb: 0 });
    appendFileSync(file, scavenge(6, 20480, 0).slice(30));
    expect(trace.next()).toMatchObject({ scavenges: 1, survivedKb: 20, scavengeMs: 6 });
    const empty = trace.next();
    expect(empty.scavenges).toBe(0);
    expect(Number.isNaN(empty.promotedKb)).toBe(true);
    expect(formatStretch({ scavenges: 2, markCompacts: 1, survivedKb: 480.4, promotedKb: 21.6, scavengeMs: 1.234 })).toBe(
      '2 scavenges (median alive 480 KB, promoted 22 KB, 1.23 ms), 1 mark-compacts',
    );
  });
});
