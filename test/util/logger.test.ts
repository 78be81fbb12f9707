import { describe, expect, it } from 'vitest';
import { levelEnabled, redactUrl, silentLogger } from '../../src/util/logger.js';

describe('redactUrl', () => {
  it('hides whatever stands before the host, and only that', () => {
    expect(redactUrl('http://user:secret@10.0.0.1:8000/v1')).toBe('http://***@10.0.0.1:8000/v1');
    expect(redactUrl('https://user@h')).toBe('https://***@h');
    expect(redactUrl('http://u:p@ss@host:8/x?y=a@b')).toBe('http://***@host:8/x?y=a@b'); // an @ in the password
    expect(redactUrl('http://host:8/a@b')).toBe('http://host:8/a@b'); // an @ in the path is not userinfo
    expect(redactUrl('http://10.0.0.1:8000')).toBe('http://10.0.0.1:8000');
  });
});

describe('silentLogger', () => {
  it('takes every call, its children too, and says no level is enabled', () => {
    silentLogger.info({ a: 1 }, 'x');
    silentLogger.child({ request_id: 'r' }).error('y');
    expect(levelEnabled(silentLogger, 'fatal')).toBe(false);
    // A logger without isLevelEnabled counts every level as enabled.
    expect(levelEnabled({ ...silentLogger, isLevelEnabled: undefined }, 'trace')).toBe(true);
  });
});
