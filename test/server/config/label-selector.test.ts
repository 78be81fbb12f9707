import { describe, expect, it } from 'vitest';
import { checkLabelSelector } from '../../../src/server/config/label-selector.js';
import { parseRouterConfig } from '../../../src/server/config/config.js';

describe('checkLabelSelector', () => {
  it("accepts Kubernetes' selector syntax", () => {
    for (const s of [
      'app=vllm',
      'app==vllm',
      'app!=vllm',
      'app',
      '!canary',
      'app in (vllm, sglang),tier notin (canary)',
      'kvroute.io/role=decode',
      'a.b-c/x_y.z=v-1',
      'app=',
      'gpu>2',
      'gpu < 8',
      ' app = vllm , tier=prod ',
    ]) {
      expect(() => checkLabelSelector(s, 'sel'), s).not.toThrow();
    }
  });

  it('names the first mistake', () => {
    const bad: Array<[string, RegExp]> = [
      ['', /it is empty/],
      ['app=vllm,', /an empty requirement/],
      ['app in (a', /unbalanced parentheses/],
      ['app in ()', /needs at least one value/],
      ['-app=x', /the key '-app' is not a label name/],
      ['Bad_Prefix/app=x', /the key prefix 'Bad_Prefix' is not a DNS subdomain/],
      [`app=${'v'.repeat(64)}`, /is not a label value/],
      ['app=a b', /is not key, !key/],
      ['gpu>two', /needs an integer/],
    ];
    for (const [s, message] of bad) expect(() => checkLabelSelector(s, 'sel'), s).toThrow(message);
    expect(() => checkLabelSelector('app=(x', 'sel')).toThrow(TypeError);
  });

  it('is checked with the configuration, with the retry bounds', () => {
    expect(() => parseRouterConfig({ discovery: { kubernetes: { selector: 'app in (a' } } })).toThrow(
      "discovery.kubernetes.selector is not a label selector (unbalanced parentheses): 'app in (a'",
    );
    expect(() => parseRouterConfig({ discovery: { kubernetes: { selector: 'app=vllm', retryBaseMs: 500, retryMaxMs: 100 } } })).toThrow(RangeError);
    expect(() => parseRouterConfig({ discovery: { kubernetes: { selector: 'app=vllm', port: 1 } } })).toThrow(/unknown field 'port'/);
    expect(parseRouterConfig({ discovery: { kubernetes: { selector: 'app=vllm' } } }).discovery?.kubernetes).toEqual({
      selector: 'app=vllm',
      retryBaseMs: 1000,
      retryMaxMs: 30_000,
      watchTimeoutSeconds: 300,
      startupTimeoutMs: 10_000,
    });
  });
});
