import { describe, expect, it } from 'vitest';
import { captureLog } from '../../helpers/log-capture.js';

describe('createLogger', () => {
  it('writes JSON lines at the level asked for, with children carrying their fields', () => {
    const log = captureLog('info');
    log.logger.debug('hidden');
    log.logger.info({ worker: 3 }, 'worker added');
    log.logger.child({ request_id: 'r-1' }).warn({ status: 502 }, 'failed');
    const lines = log.lines();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ level: 30, name: 'kvroute', worker: 3, msg: 'worker added' });
    expect(typeof lines[0].time).toBe('string'); // ISO time
    expect(lines[1]).toMatchObject({ level: 40, request_id: 'r-1', status: 502, msg: 'failed' });
    expect(log.logger.isLevelEnabled?.('debug')).toBe(false);
    expect(captureLog('silent').logger.isLevelEnabled?.('fatal')).toBe(false);
  });
});
