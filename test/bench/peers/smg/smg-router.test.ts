import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort, workerBody, workersReady } from '../../../../bench/peers/smg/smg-router.js';

describe('driving SMG', () => {
  it('adds an engine as a vLLM worker serving the benchmark model', () => {
    expect(workerBody('http://127.0.0.1:9', 'bench')).toEqual({ url: 'http://127.0.0.1:9', runtime_type: 'vllm', models: [{ id: 'bench' }] });
  });

  it('waits until every engine is listed healthy and ready', () => {
    const urls = ['http://a', 'http://b'];
    expect(workersReady({ workers: [{ url: 'http://a', is_healthy: true, status: 'ready' }] }, urls)).toBe(false);
    expect(
      workersReady(
        {
          workers: [
            { url: 'http://a', is_healthy: true, status: 'ready' },
            { url: 'http://b', is_healthy: false, status: 'ready' },
          ],
        },
        urls,
      ),
    ).toBe(false);
    expect(
      workersReady(
        {
          workers: [
            { url: 'http://a', is_healthy: true, status: 'ready' },
            { url: 'http://b', is_healthy: true, status: 'pending' },
          ],
        },
        urls,
      ),
    ).toBe(false);
    expect(
      workersReady(
        {
          workers: [
            { url: 'http://b', is_healthy: true },
            { url: 'http://a', is_healthy: true, status: 'ready' },
          ],
        },
        urls,
      ),
    ).toBe(true);
  });

  it('finds a port that can be listened on', async () => {
    const port = await freePort();
    const server = createServer();
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});
