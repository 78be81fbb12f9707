// The SSE relay: the engine's events become frames for the client a batch at a time, pulled by the
// frontend (so a slow client pauses the engine read). Completions chunks are relayed verbatim,
// chat-as-completions chunks are converted; usage is observed for metrics. The relay ends exactly
// once: at the engine's end, on an engine failure (an error frame, then the end), on cancel, or
// when the router cuts it (a drain that ran out of time: an error frame, then the end).
import { SHAPE_ERROR, SHAPE_USAGE } from '../../engines/chunk-shape.js';
import { batchesOf } from '../../engines/event-batch.js';
import { shapeOf } from '../../engines/sse.js';
import { usageCounts, usageOf, type UsageCounts } from '../../engines/usage.js';
import { ChatChunkConverter } from './chat.js';
import { errorEventFrame, errorReply, errorSummary, type WorkerOf } from '../call/errors.js';
import type { FrameStream } from '../call/call.js';
import type { RouterMetrics } from '../observability/metrics.js';
import type { RelayTrace } from '../observability/tracing.js';
import type { SseEvent } from '../../engines/types.js';

/** One server-sent event from an engine: `data` is the raw payload after "data: ". */
export type { SseEvent };

export interface RelayOptions {
  /** Metrics label: the route the client called. */
  route: string;
  /** Metrics label: the request's model. */
  model: string;
  /** The relay's span (tracing on). */
  trace?: RelayTrace;
  /** Convert completions chunks to chat.completion.chunk. */
  chat: boolean;
  /** The client asked for the usage chunk; when false, usage chunks the router asked for are dropped. */
  clientWantsUsage: boolean;
  /** performance.now() at request arrival. */
  startedAt: number;
  metrics: RouterMetrics;
  /** Aborts the engine legs (the router's own controller for this request). */
  abort(): void;
  /** Names the worker of a failed engine in the error frame (never its URL). */
  workerOf?: WorkerOf;
  /** Called once with the request's final HTTP-equivalent status (499 when the client left) and the failure that ended it, if any. */
  onEnd?(status: number, usage: UsageCounts | undefined, failure?: unknown): void;
  /** Called once when the frontend pulled the end (or cancelled): nothing more will be written. */
  onConsumed?(): void;
}

/** A relay the router can also cut short. */
export interface RelayStream extends FrameStream {
  /** Ends the stream now: the next pull gets an error frame for `err`, then the end; the engine legs abort. */
  interrupt(err: unknown): void;
}

const DONE_FRAME = 'data: [DONE]\n\n';

/** The OpenAI error code of what ended a stream: the engine's error chunk's own, or the router's mapping. */
export function failureCode(failure: unknown, workerOf: WorkerOf | undefined): string {
  if (failure instanceof Error) return errorSummary(failure, workerOf).code;
  const e = failure as { code?: unknown; type?: unknown } | null | undefined;
  if (typeof e?.code === 'string' && e.code !== '') return e.code;
  if (typeof e?.type === 'string' && e.type !== '') return e.type;
  return 'engine_error';
}

export function relayStream(source: AsyncIterable<SseEvent>, o: RelayOptions): RelayStream {
  // Whole batches (every event one engine read produced) become one string of frames.
  const batches = batchesOf(source[Symbol.asyncIterator]());
  const converter = o.chat ? new ChatChunkConverter() : undefined;
  let ended = false;
  let sawDone = false;
  let pendingEnd = false; // [DONE] was synthesised: the next call ends the stream
  let tokenFrames = 0;
  let firstTokenAt = 0;
  let lastTokenAt = 0;
  let usage: UsageCounts | undefined;
  let lastFrame: string | null = null; // an interrupt's error frame, sent by the next pull

  const finish = (status: number, failure?: unknown) => {
    if (ended) return;
    ended = true;
    const m = o.metrics;
    if (usage) m.usage(usage.promptTokens, usage.completionTokens, usage.cachedTokens ?? 0);
    m.request(o.route, status, o.model);
    let code: string | undefined;
    if (status === 200) {
      m.answered(o.route, o.model, true, (performance.now() - o.startedAt) / 1000);
      const tokens = usage?.completionTokens ?? tokenFrames;
      if (tokens > 1 && tokenFrames > 1) m.timePerOutputToken(o.route, o.model, (lastTokenAt - firstTokenAt) / 1000 / (tokens - 1));
    } else if (status !== 499) {
      code = failureCode(failure, o.workerOf);
      m.error(o.route, o.model, status, code);
    }
    o.trace?.end(status, { code, usage, tokenFrames });
    o.onEnd?.(status, usage, failure);
  };
  let consumed = false;
  /** The interrupt's frame once, then the end (the frontend has seen everything). */
  const takeLastFrame = (): string | null => {
    const frame = lastFrame;
    lastFrame = null;
    if (frame === null && !consumed) {
      consumed = true;
      o.onConsumed?.();
    }
    return frame;
  };

  const tokenArrived = () => {
    const now = performance.now();
    if (tokenFrames === 0) {
      firstTokenAt = now;
      o.metrics.firstToken(o.route, o.model, (now - o.startedAt) / 1000);
      o.trace?.firstToken();
    } else o.metrics.interToken(o.route, o.model, (now - lastTokenAt) / 1000);
    tokenFrames++;
    lastTokenAt = now;
  };

  /** The frame for one engine event ('' when it is dropped); an in-stream error ends the relay. */
  const frameOf = (ev: SseEvent): string => {
    if (ev.data === '[DONE]') {
      sawDone = true;
      return DONE_FRAME;
    }
    const needJson = converter !== undefined || (shapeOf(ev) & (SHAPE_USAGE | SHAPE_ERROR)) !== 0;
    if (!needJson) {
      tokenArrived();
      return `data: ${ev.data}\n\n`;
    }
    let json: unknown = ev.json;
    if (json === undefined) {
      try {
        json = JSON.parse(ev.data);
      } catch {
        tokenArrived();
        return `data: ${ev.data}\n\n`; // not JSON: relay untouched
      }
    }
    const chunk = json as { choices?: unknown[]; usage?: unknown; error?: unknown };
    if (chunk.error !== undefined && chunk.error !== null) {
      // The engine reported a failure inside the stream: pass it on and end.
      const status = Number((chunk.error as { code?: unknown }).code);
      finish(Number.isInteger(status) && status >= 400 && status < 600 ? status : 502, chunk.error);
      return `data: ${ev.data}\n\n`;
    }
    const u = usageOf(chunk);
    if (u) usage = usageCounts(u);
    const usageOnly = Array.isArray(chunk.choices) && chunk.choices.length === 0 && chunk.usage;
    if (usageOnly && !o.clientWantsUsage) return '';
    if (!usageOnly) tokenArrived();
    return converter ? `data: ${JSON.stringify(converter.convert(json))}\n\n` : `data: ${ev.data}\n\n`;
  };

  return {
    async next(): Promise<string | null> {
      if (pendingEnd) {
        pendingEnd = false;
        finish(200);
      }
      while (!ended) {
        let batch: readonly SseEvent[] | null;
        try {
          batch = await batches.nextBatch();
        } catch (err) {
          if (ended) return takeLastFrame(); // cancelled or cut meanwhile: the failure is the abort itself
          const frame = errorEventFrame(err, o.workerOf);
          finish(errorReply(err, o.workerOf).status, err);
          return frame;
        }
        if (ended) return takeLastFrame();
        if (batch === null) {
          if (sawDone) {
            finish(200);
            return takeLastFrame();
          }
          // Engines end with [DONE]; an engine stream that lacked it still ends properly here.
          pendingEnd = true;
          return DONE_FRAME;
        }
        let frames = '';
        for (const ev of batch) {
          frames += frameOf(ev);
          if (ended) break; // an error event ended the relay: nothing after it is sent
        }
        if (frames !== '') return frames;
      }
      return takeLastFrame();
    },

    interrupt(err: unknown): void {
      if (ended) return;
      lastFrame = errorEventFrame(err, o.workerOf);
      finish(errorReply(err).status, err);
      o.abort();
      void batches.return?.()?.catch(() => undefined);
    },

    cancel(): void {
      lastFrame = null;
      takeLastFrame();
      if (ended) return;
      o.metrics.clientDisconnect();
      finish(499);
      o.abort();
      // Let the engine-side iterator run its cleanup (booking free) without waiting for it.
      void batches.return?.()?.catch(() => undefined);
    },
  };
}
