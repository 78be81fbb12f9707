// The replica's connection to NATS, and whether it is up. The first connection is tried for
// connectTimeoutMs at startup; failing that, the replica starts alone (degraded) and a retry runs
// in the background. Once connected, the client reconnects by itself after any loss. Every
// transition is reported once (onUp / onDown), so the sync layer can re-announce on return.
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../../util/logger.js';

export interface LinkOptions {
  servers: string[];
  /** Shown in the server's connection list. */
  name: string;
  connectTimeoutMs: number;
  /** Between attempts while down (first connection; the client's own reconnects use it too). */
  retryMs: number;
  log: Logger;
  /** Connected: on the first connection and after every loss. Subscriptions are already in place. */
  onUp(): void;
  /** Connection lost (the client keeps trying). */
  onDown(reason: string): void;
}

export type MessageHandler = (data: Uint8Array) => void;

export class NatsLink {
  private nc?: NatsConnection;
  private up = false;
  private closed = false;
  private retry?: NodeJS.Timeout;
  private readonly subs = new Map<string, MessageHandler>();

  constructor(private readonly o: LinkOptions) {}

  get connected(): boolean {
    return this.up;
  }

  /** The live connection (JetStream needs it), while connected. */
  get connection(): NatsConnection | undefined {
    return this.up ? this.nc : undefined;
  }

  /** Registers a handler for a subject, in place on every connection (call before start). */
  on(subject: string, handler: MessageHandler): void {
    this.subs.set(subject, handler);
  }

  /** Resolves after the first attempt, connected or not (then degraded, retrying). */
  async start(): Promise<void> {
    await this.attempt();
  }

  /** Sends when connected; false (nothing sent) while down. */
  publish(subject: string, data: Uint8Array): boolean {
    if (!this.up || !this.nc) return false;
    try {
      this.nc.publish(subject, data);
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    const nc = this.nc;
    this.nc = undefined;
    this.up = false;
    if (nc) await nc.close().catch(() => undefined);
  }

  private async attempt(): Promise<void> {
    if (this.closed) return;
    let nc: NatsConnection;
    try {
      nc = await connect({
        servers: this.o.servers,
        name: this.o.name,
        timeout: this.o.connectTimeoutMs,
        // Our own messages are not delivered back (the sync layer also checks the sender).
        noEcho: true,
        reconnect: true,
        maxReconnectAttempts: -1,
        reconnectTimeWait: this.o.retryMs,
        pingInterval: 2000,
        maxPingOut: 2,
      });
    } catch (err) {
      if (this.closed) return;
      this.o.onDown(`cannot connect to ${this.o.servers.join(',')}: ${(err as Error).message}`);
      this.retry = setTimeout(() => void this.attempt(), this.o.retryMs);
      this.retry.unref();
      return;
    }
    if (this.closed) {
      await nc.close().catch(() => undefined);
      return;
    }
    this.nc = nc;
    for (const [subject, handler] of this.subs) {
      nc.subscribe(subject, {
        callback: (err, msg) => {
          if (err === null) handler(msg.data);
        },
      });
    }
    void this.watch(nc);
    this.up = true;
    this.o.onUp();
  }

  private async watch(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      if (this.closed) return;
      if (s.type === 'disconnect' && this.up) {
        this.up = false;
        this.o.onDown(`lost the connection to ${s.server}`);
      } else if (s.type === 'reconnect' && !this.up) {
        this.up = true;
        this.o.onUp();
      }
    }
  }
}
