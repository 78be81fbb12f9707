// An OpenAI-compatible engine that answers at once (fixed short output, no model time), so the
// frontend benchmark measures the router and not the engine. uWebSockets.js keeps it cheap. With
// `tokenGapMs`, a streamed answer is written a token at a time (a write per token, as real engines
// stream), for the router's cost per streamed token.
import uWS from 'uWebSockets.js';

export interface InstantEngine {
  url: string;
  close(): void;
}

export interface InstantEngineOptions {
  /** Streamed answers: wait this long between token writes (0: the whole answer in one write). */
  tokenGapMs?: number;
}

export function startInstantEngine(outputTokens = 4, o: InstantEngineOptions = {}): Promise<InstantEngine> {
  const gapMs = o.tokenGapMs ?? 0;
  const app = uWS.App();
  let n = 0;
  const usage = (promptTokens: number) => ({
    prompt_tokens: promptTokens,
    completion_tokens: outputTokens,
    total_tokens: promptTokens + outputTokens,
    prompt_tokens_details: { cached_tokens: 0 },
  });
  app.get('/health', (res) => {
    res.end('ok');
  });
  app.post('/v1/completions', (res) => {
    let aborted = false;
    res.onAborted(() => (aborted = true));
    const parts: Buffer[] = [];
    res.onData((chunk, isLast) => {
      // uWS's chunk is valid only during this call. A body in one chunk is read in place; only a
      // split body is copied (fresh ArrayBuffers per request drove this process into full GCs).
      if (!isLast) {
        parts.push(Buffer.from(new Uint8Array(chunk)));
        return;
      }
      if (aborted) return;
      const text = parts.length === 0 ? Buffer.from(chunk).toString() : Buffer.concat([...parts, Buffer.from(chunk)]).toString();
      const body = JSON.parse(text) as { prompt?: unknown[]; stream?: boolean; max_tokens?: number };
      const promptTokens = Array.isArray(body.prompt) ? body.prompt.length : 0;
      const id = `cmpl-${n++}`;
      const created = Math.floor(Date.now() / 1000);
      const tokens = Math.min(outputTokens, body.max_tokens ?? outputTokens);
      res.cork(() => {
        if (!body.stream) {
          res.writeHeader('content-type', 'application/json');
          res.end(
            JSON.stringify({
              id,
              object: 'text_completion',
              created,
              model: 'instant',
              choices: [{ index: 0, text: 'x'.repeat(tokens), logprobs: null, finish_reason: 'length' }],
              usage: usage(promptTokens),
              kv_transfer_params: null,
            }),
          );
          return;
        }
        res.writeHeader('content-type', 'text/event-stream');
        const chunk = (i: number) =>
          `data: ${JSON.stringify({ id, object: 'text_completion', created, model: 'instant', choices: [{ index: 0, text: 'x', logprobs: null, finish_reason: i === tokens - 1 ? 'length' : null }] })}\n\n`;
        const last = `data: ${JSON.stringify({ id, object: 'text_completion', created, model: 'instant', choices: [], usage: usage(promptTokens) })}\n\ndata: [DONE]\n\n`;
        if (gapMs === 0) {
          let out = '';
          for (let i = 0; i < tokens; i++) out += chunk(i);
          res.end(out + last);
          return;
        }
        // A write per token; the response is touched only while the router is still reading.
        let i = 0;
        const next = () => {
          if (aborted) return;
          if (i === tokens) {
            res.cork(() => res.end(last));
            return;
          }
          res.cork(() => res.write(chunk(i++)));
          setTimeout(next, gapMs);
        };
        setTimeout(next, 0);
      });
    });
  });
  // Anything else (a router probing /v1/models or a load endpoint) gets a 404 at once, not a hang.
  app.any('/*', (res) => {
    res.writeStatus('404 Not Found').end();
  });
  return new Promise((resolve, reject) => {
    app.listen('127.0.0.1', 0, (token) => {
      if (!token) return reject(new Error('instant engine: cannot listen'));
      const port = uWS.us_socket_local_port(token as unknown as Parameters<typeof uWS.us_socket_local_port>[0]);
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () => {
          uWS.us_listen_socket_close(token);
          (app as unknown as { close?: () => void }).close?.();
        },
      });
    });
  });
}
