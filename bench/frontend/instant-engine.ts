// An OpenAI-compatible engine that answers at once (fixed short output, no model time), so the
// frontend benchmark measures the router and not the engine. uWebSockets.js keeps it cheap.
import uWS from 'uWebSockets.js';

export interface InstantEngine {
  url: string;
  close(): void;
}

export function startInstantEngine(outputTokens = 4): Promise<InstantEngine> {
  const app = uWS.App();
  let n = 0;
  const usage = (promptTokens: number) => ({ prompt_tokens: promptTokens, completion_tokens: outputTokens, total_tokens: promptTokens + outputTokens, prompt_tokens_details: { cached_tokens: 0 } });
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
          res.end(JSON.stringify({ id, object: 'text_completion', created, model: 'instant', choices: [{ index: 0, text: 'x'.repeat(tokens), logprobs: null, finish_reason: 'length' }], usage: usage(promptTokens), kv_transfer_params: null }));
          return;
        }
        res.writeHeader('content-type', 'text/event-stream');
        let out = '';
        for (let i = 0; i < tokens; i++) {
          out += `data: ${JSON.stringify({ id, object: 'text_completion', created, model: 'instant', choices: [{ index: 0, text: 'x', logprobs: null, finish_reason: i === tokens - 1 ? 'length' : null }] })}\n\n`;
        }
        out += `data: ${JSON.stringify({ id, object: 'text_completion', created, model: 'instant', choices: [], usage: usage(promptTokens) })}\n\n`;
        out += 'data: [DONE]\n\n';
        res.end(out);
      });
    });
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
