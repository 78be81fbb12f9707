// The server-neutral request and reply the Router speaks. Each frontend (uWebSockets.js,
// node:http / Express, Fastify, Web fetch / Hono) only translates its own objects to these and
// drives the reply stream with its own backpressure; all behaviour lives behind Router.handle.
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
  signal?: AbortSignal;
}

/**
 * A pull-based stream of SSE frames ("data: ...\n\n"). The frontend asks for the next frame only
 * after the previous one was accepted by its socket, so a slow client pauses the engine read.
 */
export interface FrameStream {
  /** The next frame, or null at the end. Never rejects: failures become an error frame. */
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

/** Normalises a peer address for the loopback check (IPv4-mapped IPv6 included). */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.toLowerCase();
  return a === '::1' || a.startsWith('127.') || a.startsWith('::ffff:127.') || a === '0000:0000:0000:0000:0000:0000:0000:0001';
}
