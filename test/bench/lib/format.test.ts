import { describe, expect, it } from 'vitest';
import { formatCompact, formatCount, formatNumber, formatValue } from '../../../bench/lib/format.js';

describe('format', () => {
  it('keeps three significant digits with k/M/G from 10,000', () => {
    expect(formatNumber(0)).toBe('0');
    expect(formatNumber(0.012345)).toBe('0.0123');
    expect(formatNumber(4.5678)).toBe('4.57');
    expect(formatNumber(45.678)).toBe('45.7');
    expect(formatNumber(789.4)).toBe('789');
    expect(formatNumber(9999)).toBe('9999');
    expect(formatNumber(12_345)).toBe('12.3k');
    expect(formatNumber(4_500_000)).toBe('4.5M');
    expect(formatNumber(1_048_576)).toBe('1.05M');
    expect(formatNumber(45_000_000)).toBe('45M');
    expect(formatNumber(-12_345)).toBe('-12.3k');
    expect(formatNumber(Number.NaN)).toBe('n/a');
    expect(formatNumber(Number.POSITIVE_INFINITY)).toBe('∞');
  });

  it('formats ticks, counts and values', () => {
    expect(formatCompact(1000)).toBe('1k');
    expect(formatCompact(1_000_000)).toBe('1M');
    expect(formatCompact(0.5)).toBe('0.5');
    expect(formatCount(1_048_576)).toBe('1,048,576');
    expect(formatValue(5.678, 'GB/s')).toBe('5.68 GB/s');
    expect(formatValue(2, '')).toBe('2');
  });
});
