// The server-neutral request and reply the Router speaks. Each frontend (uWebSockets.js,
// node:http / Express, Fastify, Web fetch / Hono) only translates its own objects to these and
// drives the reply stream with its own backpressure; all behaviour lives behind Router.handle.
import type { SignalLike } from '../../util/cancellation.js';
import type { BodySource } from './body.js';

export interface HttpCall {
  /** Upper-case method. */
  method: string;
  /** Path, optionally with a query string. */
  url: string;
  /** Header names in lower case. */
  headers: Record<string, string | undefined>;
  /** The body: collected bytes or a stream; the router enforces the size limit either way. */
  body?: BodySource;
  /** Peer address (the admin API without a token answers loopback peers only). */
  remoteAddress?: string;
  /** Aborted when the client goes away: engine legs are cancelled and bookings freed. */
  signal?: SignalLike;
}

/**
 * A pull-based stream of SSE frames ("data: ...\n\n"). The frontend asks for the next frame only
 * after the previous one was accepted by its socket, so a slow client pauses the engine read.
 */
export interface FrameStream {
  /** The next frame or frames (concatenated), or null at the end. Never rejects: failures become an error frame. */
  next(): Promise<string | null>;
  /** The client is gone or the frontend gives up: cancel engine legs, free the booking. Idempotent. */
  cancel(): void;
}

export interface HttpReply {
  status: number;
  headers: Record<string, string>;
  body?: string;
  stream?: FrameStream;
}

export interface FrameBatch {
  /** The frames, concatenated ('' when the stream ended with nothing new). */
  text: string;
  /** The stream ended after these frames. */
  done: boolean;
}

/**
 * Pulls the frames that are ready within one turn of the event loop, so a frontend writes them
 * with one socket write instead of one per frame (an engine usually delivers several events per
 * TCP read). Never reads past the turn: a slow engine still gets its frames relayed at once, and a
 * frontend that stops calling nextBatch() stops the pulls.
 */
export class FrameBatcher {
  private pending: Promise<string | null> | undefined;

  constructor(private readonly stream: FrameStream) {}

  async nextBatch(): Promise<FrameBatch> {
    const first = await this.take();
    if (first === null) return { text: '', done: true };
    let text = first;
    let turnOver = false;
    let endOfTurn!: () => void;
    const boundary = new Promise<typeof TURN_OVER>((resolve) => (endOfTurn = () => resolve(TURN_OVER)));
    const timer = setImmediate(() => {
      turnOver = true;
      endOfTurn();
    });
    try {
      while (!turnOver) {
        const next = this.stream.next();
        const r = await Promise.race([next, boundary]);
        if (r === TURN_OVER) {
          this.pending = next; // keep it for the next batch: a pull is never dropped
          break;
        }
        if (r === null) return { text, done: true };
        text += r;
      }
      return { text, done: false };
    } finally {
      clearImmediate(timer);
    }
  }

  private take(): Promise<string | null> {
    const p = this.pending ?? this.stream.next();
    this.pending = undefined;
    return p;
  }
}

const TURN_OVER = Symbol('turn over');

/** A frame stream over a fixed list of frames (tests, and replies known in full). */
export function framesOf(frames: readonly string[]): FrameStream {
  let i = 0;
  return {
    next: async () => (i < frames.length ? frames[i++] : null),
    cancel: () => {
      i = frames.length;
    },
  };
}

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
};

/** Paths answered with the admin API's access rules and on its listener: /admin and the live page under /dashboard. */
export function isAdminListenerPath(path: string): boolean {
  return path === '/admin' || path.startsWith('/admin/') || path === '/dashboard' || path.startsWith('/dashboard/');
}

/** A loopback peer or bind address, in its usual spellings (IPv4-mapped IPv6 included). */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.toLowerCase();
  return a === 'localhost' || a === '::1' || a.startsWith('127.') || a.startsWith('::ffff:127.') || a === '0000:0000:0000:0000:0000:0000:0000:0001';
}
