// Binding a uWebSockets.js app, shared by the router's frontend and the simulated worker. uWS sets
// SO_REUSEPORT by default, so a second process on a busy port would "listen" too and the kernel
// would split connections between the two; unless sharing is asked for, the port is bound
// exclusively (LIBUS_LISTEN_EXCLUSIVE_PORT) and a busy one is an error naming it.
import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';

const LISTEN_DEFAULT = 0;
const LISTEN_EXCLUSIVE_PORT = 1;

export function listenOn(app: TemplatedApp, host: string, port: number, reusePort: boolean, what = 'HTTP server'): Promise<us_listen_socket> {
  return new Promise((resolve, reject) => {
    // The typings lack the (host, port, options, cb) form the binary has.
    const listen = app.listen as unknown as (host: string, port: number, options: number, cb: (token: us_listen_socket | false) => void) => void;
    listen.call(app, host, port, reusePort ? LISTEN_DEFAULT : LISTEN_EXCLUSIVE_PORT, (token) => {
      if (token) resolve(token);
      else reject(new Error(`cannot listen on ${host}:${port} (${what}): the port is in use by another process, or the address is not available here${reusePort ? '' : ' (--reuse-port shares a port with processes that allow sharing)'}`));
    });
  });
}
