// A peer driven as a child process over a line protocol: one command per stdin line, one JSON
// line back ({ type, ... }, or { type: 'error', error }). The Dynamo indexer crate and Dynamo's
// replay driver speak it; the peer idles between commands, so its rounds alternate with kvroute's.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { stopProcess } from '../lib/stop-process.js';

export class LinePeer {
  private readonly lines: AsyncIterator<string>;
  private stderr = '';
  /** How the process ended (its stdio closed), for the error when it ends unasked. */
  private readonly ended: Promise<string>;

  private constructor(
    /** "the Dynamo peer": how messages name it. */
    private readonly name: string,
    private readonly child: ChildProcessWithoutNullStreams,
  ) {
    this.ended = new Promise((resolve) => child.once('close', (code, signal) => resolve(signal ?? `exit code ${code}`)));
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (s: string) => {
      this.stderr = (this.stderr + s).slice(-4000);
    });
    this.lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  }

  /** Starts the process; resolves once it runs (its first reply is read with next()). */
  static async start(name: string, command: string, args: readonly string[], env?: NodeJS.ProcessEnv): Promise<LinePeer> {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], env: env ?? process.env });
    const peer = new LinePeer(name, child);
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (err) => reject(new Error(`cannot start ${name} ${command}: ${err.message}`)));
    });
    return peer;
  }

  /** Sends one command and reads its reply, which must be of `type`. */
  command<T>(line: string, type: string): Promise<T> {
    this.child.stdin.write(`${line}\n`);
    return this.next<T>(type);
  }

  async next<T>(type: string): Promise<T> {
    const r = await this.lines.next();
    if (r.done) throw new Error(`${this.name} ended (${await this.ended}) before answering: ${this.stderr.trim() || 'no output'}`);
    const reply = JSON.parse(r.value) as { type: string; error?: string };
    if (reply.type === 'error') throw new Error(`${this.name} refused a command: ${reply.error}`);
    if (reply.type !== type) throw new Error(`${this.name} answered ${reply.type}, expected ${type}`);
    return reply as T;
  }

  /** Sends `quit` and waits for the process to exit (killed after `graceMs`). */
  close(graceMs = 10_000): Promise<void> {
    return stopProcess(this.child, () => this.child.stdin.end('quit\n'), graceMs);
  }
}
