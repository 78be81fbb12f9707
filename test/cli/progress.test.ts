import { describe, expect, it } from 'vitest';
import { PLAIN_PROGRESS_INTERVAL_MS, ProgressLine } from '../../src/cli/progress.js';

function sink(isTTY: boolean) {
  const writes: string[] = [];
  return { isTTY, writes, write: (s: string) => writes.push(s) };
}

describe('ProgressLine', () => {
  it('rewrites the line in place on a terminal, and clears or keeps it at the end', () => {
    const tty = sink(true);
    const p = new ProgressLine(tty);
    expect(p.interactive).toBe(true);
    p.update('1/3');
    p.update('2/3');
    p.end();
    p.update('late'); // nothing after the end
    expect(tty.writes).toEqual(['\r\x1b[2K1/3', '\r\x1b[2K2/3', '\r\x1b[2K']);
    const kept = sink(true);
    const q = new ProgressLine(kept, { keepOnTerminal: true });
    q.update('done');
    q.end();
    expect(kept.writes).toEqual(['\r\x1b[2Kdone', '\n']);
  });

  it('prints plain lines elsewhere: the first at once, then at most one per interval, and the last state at the end', () => {
    let now = 1_000;
    const pipe = sink(false);
    const p = new ProgressLine(pipe, { intervalMs: 5_000, now: () => now });
    expect(p.interactive).toBe(false);
    p.update('a');
    now += 4_999;
    p.update('b'); // too soon
    now += 1;
    p.update('c');
    now += 3_000;
    p.update('d');
    p.end();
    p.end();
    expect(pipe.writes).toEqual(['a (0 s)\n', 'c (5 s)\n', 'd (8 s)\n']);
    expect(pipe.writes.join('')).not.toMatch(/[\r\x1b]/);
  });

  it('prints nothing more at the end when the last state was printed, and nothing at all without updates', () => {
    const pipe = sink(false);
    const p = new ProgressLine(pipe, { now: () => 0 });
    p.update('only');
    p.end();
    expect(pipe.writes).toEqual(['only (0 s)\n']);
    const quiet = sink(false);
    new ProgressLine(quiet).end();
    const quietTty = sink(true);
    new ProgressLine(quietTty).end();
    expect([...quiet.writes, ...quietTty.writes]).toEqual([]);
    expect(PLAIN_PROGRESS_INTERVAL_MS).toBeGreaterThanOrEqual(1_000);
  });
});
