// A user's Express app (copied into a fresh project by install.test.ts): kvroute's router
// (kvroute/server) in front of one simulated engine worker (kvroute/sim), next to a route of the
// app's own. Sends one completion through it and prints what the client saw, as JSON.
import { once } from 'node:events';
import { createRequire } from 'node:module';
import express from 'express';
import { createRouter, nodeHandler } from 'kvroute/server';
import { startSimWorker } from 'kvroute/sim';

const model = 'user-model';
const worker = await startSimWorker({ id: 7, model, engine: { blockSize: 16, speedup: 100 } });
const router = await createRouter({
  model,
  blockSize: 16,
  health: { intervalMs: 0 },
  workers: [{ id: 7, role: 'aggregated', kind: 'vllm', baseUrl: worker.url, kvEvents: worker.eventsEndpoint, replayEndpoint: worker.replayEndpoint }],
});
const app = express();
app.get('/hello', (_req, res) => {
  res.send('the app still serves its own routes');
});
app.use(nodeHandler(router));
const server = app.listen(0, '127.0.0.1');
await once(server, 'listening');
const base = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`;
try {
  const res = await fetch(`${base}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': 'user-req-1' },
    body: JSON.stringify({ model, prompt: 'Route me through kvroute, please: I am a user of the package.', max_tokens: 8 }),
  });
  const body = await res.json();
  const hello = await (await fetch(`${base}/hello`)).text();
  const headers = Object.fromEntries([...res.headers].filter(([name]) => name.startsWith('x-kvroute-') || name === 'x-request-id'));
  // Native addons this process loaded (require's cache holds them, whoever required them).
  const addons = Object.keys(createRequire(import.meta.url).cache).filter((path) => path.endsWith('.node'));
  console.log(JSON.stringify({ status: res.status, headers, body, hello, addons }));
} finally {
  server.close();
  await router.close();
  await worker.close();
}
