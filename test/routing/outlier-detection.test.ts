import { describe, expect, it } from 'vitest';
import { OutlierDetection } from '../../src/routing/outlier-detection.js';

function detection(o: ConstructorParameters<typeof OutlierDetection>[0] = {}, workers = [1, 2, 3, 4]) {
  const d = new OutlierDetection(o);
  for (const w of workers) d.add(w);
  return d;
}

describe('OutlierDetection', () => {
  it("has Envoy's shape with kvroute's defaults: one connect failure, five 5xx, 30 s growing to 300 s, half a pool", () => {
    const d = new OutlierDetection();
    expect(d).toMatchObject({
      consecutiveConnectFailures: 1,
      consecutive5xx: 5,
      baseEjectionTimeMs: 30_000,
      maxEjectionTimeMs: 300_000,
      maxEjectionPercent: 50,
    });
  });

  it('ejects after the consecutive failures of one kind; an answer in between starts the count again', () => {
    const d = detection({ consecutiveConnectFailures: 2, consecutive5xx: 3 });
    expect(d.record(1, 'connect_failure', 0, 4).kind).toBe('none');
    expect(d.record(1, 'answered', 1, 4).kind).toBe('none');
    expect(d.record(1, 'connect_failure', 2, 4).kind).toBe('none');
    expect(d.record(1, 'connect_failure', 3, 4)).toEqual({ kind: 'ejected', reason: 'connect_failure', untilMs: 30_003, durationMs: 30_000, ejections: 1 });
    expect(d.isEjected(1)).toBe(true);
    for (let i = 0; i < 2; i++) expect(d.record(2, 'server_error', 10, 4).kind).toBe('none');
    expect(d.record(2, 'server_error', 10, 4)).toMatchObject({ kind: 'ejected', reason: 'server_error' });
    expect(d.status(2)).toEqual({ ejectedUntil: 30_010, ejections: 1, lastEjectionReason: 'server_error' });
    expect(d.status(3)).toEqual({ ejections: 0 });
  });

  it('never ejects for a kind whose threshold is 0', () => {
    const d = detection({ consecutiveConnectFailures: 0, consecutive5xx: 0 });
    for (let i = 0; i < 100; i++) {
      expect(d.record(1, 'connect_failure', i, 4).kind).toBe('none');
      expect(d.record(1, 'server_error', i, 4).kind).toBe('none');
    }
  });

  it('makes each ejection of a failing run longer, up to the cap; an answer ends the run', () => {
    const d = detection({ baseEjectionTimeMs: 100, maxEjectionTimeMs: 250 });
    const lengths: number[] = [];
    let now = 0;
    for (let i = 0; i < 4; i++) {
      const v = d.record(1, 'connect_failure', now, 4);
      if (v.kind !== 'ejected') throw new Error(`not ejected: ${v.kind}`);
      lengths.push(v.durationMs);
      now = v.untilMs;
      expect(d.expire(now)).toEqual([1]); // back in selection, failing again at once
    }
    expect(lengths).toEqual([100, 200, 250, 250]);
    d.record(1, 'answered', now, 4);
    expect(d.record(1, 'connect_failure', now, 4)).toMatchObject({ kind: 'ejected', durationMs: 100, ejections: 5 });
  });

  it('ejects no more than the max percentage of a pool, and never the only worker at 50%', () => {
    const d = detection({ maxEjectionPercent: 50 });
    expect(d.record(1, 'connect_failure', 0, 4).kind).toBe('ejected');
    expect(d.record(2, 'connect_failure', 0, 4).kind).toBe('ejected');
    expect(d.record(3, 'connect_failure', 0, 4)).toEqual({ kind: 'capped', reason: 'connect_failure' });
    expect(d.ejected).toBe(2);
    const alone = detection({}, [9]);
    expect(alone.record(9, 'connect_failure', 0, 1).kind).toBe('capped');
    expect(detection({ maxEjectionPercent: 100 }, [9]).record(9, 'connect_failure', 0, 1).kind).toBe('ejected');
    expect(detection({ maxEjectionPercent: 0 }).record(1, 'connect_failure', 0, 4).kind).toBe('capped');
  });

  it('ends ejections when their time runs out, checking one number until then', () => {
    const d = detection({ baseEjectionTimeMs: 1000 });
    d.record(1, 'connect_failure', 0, 4);
    d.record(2, 'connect_failure', 500, 4);
    expect(d.due(999)).toBe(false);
    expect(d.expire(999)).toEqual([]);
    expect(d.expire(1000)).toEqual([1]);
    expect(d.due(1200)).toBe(false);
    expect(d.expire(1500)).toEqual([2]);
    expect(d.ejected).toBe(0);
  });

  it('lets a passed health check end an ejection for connect failures, not one for 5xx answers', () => {
    const d = detection({ consecutive5xx: 1 });
    d.record(1, 'connect_failure', 0, 4);
    d.record(2, 'server_error', 0, 4);
    expect(d.healthCheckPassed(1)).toBe(true);
    expect(d.healthCheckPassed(2)).toBe(false); // /health does not see what fails the requests
    expect(d.healthCheckPassed(3)).toBe(false);
    expect(d.isEjected(1)).toBe(false);
    expect(d.isEjected(2)).toBe(true);
    // The run goes on: failing again right after coming back ejects it for longer.
    expect(d.record(1, 'connect_failure', 10, 4)).toMatchObject({ kind: 'ejected', durationMs: 60_000, ejections: 2 });
  });

  it('ignores failures of a worker already ejected (legs sent before) and of unknown workers; remove frees its slot', () => {
    const d = detection({ maxEjectionPercent: 25 });
    d.record(1, 'connect_failure', 0, 4);
    expect(d.record(1, 'connect_failure', 1, 4).kind).toBe('none');
    expect(d.status(1)?.ejections).toBe(1);
    expect(d.record(42, 'connect_failure', 1, 4).kind).toBe('none');
    expect(d.record(2, 'connect_failure', 1, 4).kind).toBe('capped');
    d.remove(1);
    expect(d.ejected).toBe(0);
    expect(d.record(2, 'connect_failure', 1, 4).kind).toBe('ejected');
  });

  it('refuses bad options with a RangeError or TypeError naming them', () => {
    expect(() => new OutlierDetection({ consecutive5xx: -1 })).toThrow(RangeError);
    expect(() => new OutlierDetection({ maxEjectionPercent: 101 })).toThrow(/maxEjectionPercent/);
    expect(() => new OutlierDetection({ baseEjectionTimeMs: 0 })).toThrow(/baseEjectionTimeMs/);
    expect(() => new OutlierDetection({ baseEjectionTimeMs: 10, maxEjectionTimeMs: 5 })).toThrow(
      /maxEjectionTimeMs \(5\) must be at least baseEjectionTimeMs \(10\)/,
    );
    expect(() => new OutlierDetection({ consecutiveConnectFailures: 1.5 })).toThrow(/consecutiveConnectFailures/);
    expect(() => new OutlierDetection(null as never)).toThrow(TypeError);
  });
});
