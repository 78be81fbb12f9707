// Binding a uWebSockets.js app, shared by the router's frontend and the simulated worker. uWS sets
// SO_REUSEPORT by default, so a second process on a busy port would "listen" too and the kernel
// would split connections between the two; unless sharing is asked for, the port is bound
// exclusively (LIBUS_LISTEN_EXCLUSIVE_PORT) and a busy one is an error naming it.
//
// After a process on the port ended (a crash, SIGKILL, a drain that closed its connections first),
// the kernel may keep the port for the TIME_WAIT of those connections (60 s on Linux) and refuse
// the bind: a SIGKILLed `kvroute mock` could not be started again on its port for 60 s (seen
// with a kept-alive client connection open at the kill; node:net's bind, with SO_REUSEADDR, was
// refused too). A port nothing accepts connections on is such a port, not a busy one: the bind
// is tried again until it is released.
import { connect, createServer } from 'node:net';
import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';

const LISTEN_DEFAULT = 0;
const LISTEN_EXCLUSIVE_PORT = 1;
/** Linux keeps a closed connection in TIME_WAIT for 60 s; a little more for the retries. */
const RELEASE_WAIT_MS = 65_000;
const RETRY_MS = 250;

export interface ListenOptions {
  /** How long to wait for a port held only by closed connections (TIME_WAIT). Default 65 s. */
  releaseWaitMs?: number;
  /** Called once when the port is found held only by closed connections, before waiting for it. */
  onWaitForRelease?(): void;
}

export async function listenOn(
  app: TemplatedApp,
  host: string,
  port: number,
  reusePort: boolean,
  what = 'HTTP server',
  o: ListenOptions = {},
): Promise<us_listen_socket> {
  const deadline = Date.now() + (o.releaseWaitMs ?? RELEASE_WAIT_MS);
  let waiting = false;
  for (;;) {
    const token = await bind(app, host, port, reusePort);
    if (token) return token;
    // Port 0 never fails for being held; a port something accepts connections on is busy.
    const held = port !== 0 && Date.now() < deadline && (await heldByClosedConnections(host, port));
    if (!held) {
      throw new Error(
        `cannot listen on ${host}:${port} (${what}): the port is in use by another process, or the address is not available here${reusePort ? '' : ' (--reuse-port shares a port with processes that allow sharing)'}${waiting ? ' (still held by the closed connections of a process that ended)' : ''}`,
      );
    }
    if (!waiting) o.onWaitForRelease?.();
    waiting = true;
    await new Promise((r) => setTimeout(r, RETRY_MS));
  }
}

function bind(app: TemplatedApp, host: string, port: number, reusePort: boolean): Promise<us_listen_socket | false> {
  return new Promise((resolve) => {
    // The typings lack the (host, port, options, cb) form the binary has.
    const listen = app.listen as unknown as (host: string, port: number, options: number, cb: (token: us_listen_socket | false) => void) => void;
    listen.call(app, host, port, reusePort ? LISTEN_DEFAULT : LISTEN_EXCLUSIVE_PORT, (token) => resolve(token));
  });
}

/** node:net (SO_REUSEADDR) binds it, or it is in use while nothing accepts connections on it. */
async function heldByClosedConnections(host: string, port: number): Promise<boolean> {
  const code = await bindError(host, port);
  return code === undefined || (code === 'EADDRINUSE' && !(await accepting(host, port)));
}

/** Why node:net cannot bind host:port now (EADDRINUSE, EADDRNOTAVAIL, ...); undefined when it can. */
function bindError(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'unknown'));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(undefined)));
  });
}

/** Whether something accepts TCP connections on host:port (refused, or no answer: no). */
function accepting(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host, port });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(2000, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}
