// SIGTERM and SIGINT as an operator sends them, to real `kvroute serve` and `kvroute mock`
// processes: streams in flight finish to [DONE] and the process exits 0; past the drain timeout the
// streams end with an error frame; a second signal exits at once; `npm start` leaves no orphan.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { killAll, ROOT, spawnCli, spawnTracked, type CliProcess } from '../helpers/processes.js';

afterEach(() => killAll());

/** A streamed completion, its text collected as it arrives. */
function stream(url: string, maxTokens: number) {
  let text = '';
  const started = { value: false };
  const done = fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'Tell me about draining.', max_tokens: maxTokens, stream: true, ignore_eos: true }),
  }).then(async (res) => {
    expect(res.status).toBe(200);
    const decoder = new TextDecoder();
    for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) {
      text += decoder.decode(part);
      started.value = true;
    }
    return text;
  });
  done.catch(() => undefined); // awaited by the test when it matters; a cut stream must not count as unhandled
  return { started, done };
}

async function until(cond: () => boolean, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Refused at once: the listener stopped accepting. */
async function refused(url: string): Promise<boolean> {
  try {
    await fetch(`${url}/health`, { signal: AbortSignal.timeout(5000) });
    return false;
  } catch (err) {
    return /ECONNREFUSED/.test(String((err as { cause?: unknown }).cause ?? err));
  }
}

/** A mock worker process, and its URLs from its startup line. */
async function startMock(args: string[] = []): Promise<{ p: CliProcess; url: string; events: string; replay: string }> {
  const p = spawnCli(['mock', '--port', '0', '--zmq-port', '0', '--replay-port', '0', '--log-level', 'warn', ...args]);
  const m = await p.waitFor(/http (http:\/\/\S+)\s+events (tcp:\/\/\S+)\s+replay (tcp:\/\/\S+)/);
  return { p, url: m[1], events: m[2], replay: m[3] };
}

async function faults(url: string, cmd: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${url}/admin/faults`, { method: 'POST', body: JSON.stringify(cmd) });
  expect(res.status).toBe(200);
}

/**
 * A router in front of one mock worker, whose streams last seconds (7 ms a token), so that a
 * stream is still running when the test makes the worker hold it (hang) right after it started.
 */
async function routerOverMock(drainMs: number) {
  const mock = await startMock(['--speedup', '1']);
  const serve = spawnCli([
    'serve',
    '--port',
    '0',
    '--health-interval-ms',
    '0',
    '--drain-timeout-ms',
    String(drainMs),
    '--worker',
    `id=0,url=${mock.url},events=${mock.events},replay=${mock.replay}`,
  ]);
  const url = (await serve.waitFor(/kvroute listening on (http:\/\/\S+)/))[1];
  return { mock, serve, url };
}

describe('kvroute serve on SIGTERM', () => {
  it('stops accepting, lets the streams in flight finish to [DONE], frees every booking and exits 0', async () => {
    const { mock, serve, url } = await routerOverMock(20_000);
    const streams = [stream(url, 400), stream(url, 400)];
    await until(() => streams.every((s) => s.started.value), 'both streams to start');
    await faults(mock.url, { hang: true }); // the streams stay in flight until the test lets them go
    serve.child.kill('SIGTERM');
    await serve.waitFor(/"msg":"draining: \/health answers 503/);
    expect(await refused(url)).toBe(true);
    await faults(mock.url, { hang: false });
    for (const text of await Promise.all(streams.map((s) => s.done))) expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(await serve.exited()).toBe(0);
    expect(serve.output()).toMatch(/"msg":"stopped: 2 requests were in flight, 0 cut, 0 bookings left"/);
  });

  it('past --drain-timeout-ms ends the streams still running with an error frame, and still exits 0', async () => {
    const { mock, serve, url } = await routerOverMock(300);
    const s = stream(url, 400);
    await until(() => s.started.value, 'the stream to start');
    await faults(mock.url, { hang: true });
    serve.child.kill('SIGTERM');
    const text = await s.done;
    expect(text).toContain('"code":"router_shutting_down"');
    expect(text).not.toContain('[DONE]');
    expect(await serve.exited()).toBe(0);
    expect(serve.output()).toMatch(/"msg":"stopped: 1 requests were in flight, 1 cut, 0 bookings left"/);
    await faults(mock.url, { hang: false });
  });

  it('exits at once, with status 128 + the signal, on a second signal', async () => {
    const { mock, serve, url } = await routerOverMock(60_000);
    const s = stream(url, 400);
    await until(() => s.started.value, 'the stream to start');
    await faults(mock.url, { hang: true });
    serve.child.kill('SIGTERM');
    await serve.waitFor(/"msg":"draining/);
    // Not the same signal repeated within 250 ms (one Ctrl-C seen twice under npm): a second one.
    await new Promise((r) => setTimeout(r, 400));
    serve.child.kill('SIGTERM');
    expect(await serve.exited(5_000)).toBe(143);
    expect(serve.output()).toMatch(/"msg":"second signal: exiting at once"/);
    await s.done.catch(() => undefined);
  });
});

describe('kvroute mock on SIGTERM', () => {
  it('lets its streams finish to [DONE] and exits 0; no new connection is accepted meanwhile', async () => {
    const mock = await startMock(['--speedup', '0.25', '--log-level', 'info']);
    const s = stream(mock.url, 80); // about 2 s of tokens at this speed
    await until(() => s.started.value, 'the stream to start');
    mock.p.child.kill('SIGTERM');
    await mock.p.waitFor(/"msg":"stopping: draining/);
    expect(await refused(mock.url)).toBe(true);
    expect((await s.done).endsWith('data: [DONE]\n\n')).toBe(true);
    expect(await mock.p.exited()).toBe(0);
    expect(mock.p.output()).toMatch(/"msg":"stopped: 1 requests were in flight, 0 cut"/);
  });

  it('cuts its streams with an error event past --drain-timeout-ms', async () => {
    const mock = await startMock(['--speedup', '0.25', '--drain-timeout-ms', '200', '--log-level', 'info']);
    const s = stream(mock.url, 400);
    await until(() => s.started.value, 'the stream to start');
    mock.p.child.kill('SIGINT');
    const text = await s.done;
    expect(text).toContain('"code":"worker_shutting_down"');
    expect(await mock.p.exited()).toBe(0);
    expect(mock.p.output()).toMatch(/"msg":"stopped: 1 requests were in flight, 1 cut"/);
  });
});

describe('npm start', () => {
  // npm runs the start script through sh: without `exec` the shell stayed between npm and node,
  // died on the signal npm forwarded, and left node running, holding the port.
  const built = existsSync(join(ROOT, 'dist/cli.js'));

  it.runIf(built)('leaves no process behind when npm gets SIGTERM', async () => {
    const npm = spawnTracked('npm', ['start', '--silent', '--', '--port', '0', '--embedded-decode', '1', '--embedded-prefill', '0'], {
      env: { KVROUTE_LOG_LEVEL: 'info' },
    });
    const pid = Number((await npm.waitFor(/"pid":(\d+).*"msg":"kvroute started"/))[1]);
    expect(pid).not.toBe(npm.child.pid);
    try {
      npm.child.kill('SIGTERM');
      await npm.exited(); // npm's own status reports the signal it got (143); what matters is node's exit
      expect(npm.output()).toMatch(/"msg":"stopped: 0 requests were in flight/);
      expect(alive(pid)).toBe(false);
    } finally {
      if (alive(pid)) process.kill(pid, 'SIGKILL'); // an orphan must not outlive the test
    }
  });

  it.runIf(built)('drains on one Ctrl-C (the terminal and npm both send SIGINT: counted once)', async () => {
    const npm = spawnTracked('npm', ['start', '--silent', '--', '--port', '0', '--embedded-decode', '1', '--embedded-prefill', '0', '--speedup', '0.25'], {
      detached: true,
    });
    const url = (await npm.waitFor(/kvroute listening on (http:\/\/\S+)/))[1];
    const pid = Number((await npm.waitFor(/"pid":(\d+).*"msg":"kvroute started"/))[1]);
    const s = stream(url, 80);
    await until(() => s.started.value, 'the stream to start');
    process.kill(-npm.child.pid!, 'SIGINT'); // the whole process group, as a terminal's Ctrl-C
    expect((await s.done).endsWith('data: [DONE]\n\n')).toBe(true);
    await npm.exited();
    expect(npm.output()).toMatch(/"msg":"stopped: 1 requests were in flight, 0 cut, 0 bookings left"/);
    expect(npm.output()).not.toMatch(/"msg":"second signal/);
    expect(alive(pid)).toBe(false);
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
