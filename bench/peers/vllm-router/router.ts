// vllm-router as the peers suite runs it: `vllm-router --worker-urls ... --policy P` on loopback,
// ready once /health answers and a request for the model is served.
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'undici';
import { stopProcess } from '../../lib/stop-process.js';
import { freePort } from '../smg/smg-router.js';

export type VllmRouterPolicy = 'cache_aware' | 'round_robin';

export interface RunningVllmRouter {
  url: string;
  pid: number;
  close(): Promise<void>;
}

export async function startVllmRouter(o: { bin: string; policy: VllmRouterPolicy; workers: readonly string[]; model: string }): Promise<RunningVllmRouter> {
  const port = await freePort();
  const args = ['--host', '127.0.0.1', '--port', String(port), '--policy', o.policy, '--worker-urls', ...o.workers, '--log-level', 'warning'];
  const child: ChildProcess = spawn(o.bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (s: string) => (stderr = (stderr + s).slice(-4000)));
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = `vllm-router exited (${signal ?? `code ${code}`}): ${stderr.trim().split('\n').slice(-5).join(' | ')}`));
  const url = `http://127.0.0.1:${port}`;
  const close = () => stopProcess(child, () => child.kill('SIGTERM'));
  try {
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (exited) throw new Error(exited);
      const ok = await request(`${url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: o.model, prompt: 'ready?', max_tokens: 1 }),
      }).then(
        async (r) => {
          await r.body.dump();
          return r.statusCode === 200;
        },
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`vllm-router not serving after 120 s: ${stderr.trim().slice(-500)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    return { url, pid: child.pid!, close };
  } catch (err) {
    await close();
    throw err;
  }
}
