// SGLang bootstrap (PROTOCOLS.md 3b): both legs carry bootstrap_host, bootstrap_port and
// bootstrap_room (one room per item of a batched prompt) and run at once. The prefill leg's
// answer is drained, never relayed, so it is asked for as one JSON answer (stream false, no
// stream_options): its usage then carries the prefill's cached tokens for the client's usage.
import { withFields } from '../../util/objects.js';
import { promptTokensDetailsOf } from '../usage.js';
import type { BootstrapAddress, BootstrapHandoff, Body } from './types.js';

export const sglangHandoff: BootstrapHandoff = {
  kind: 'sglang',
  mode: 'bootstrap',

  rooms(client: Body, makeRoom: () => bigint): bigint | bigint[] {
    const batch = batchSize(client);
    return batch === undefined ? makeRoom() : Array.from({ length: batch }, makeRoom);
  },

  prefillBody(client: Body, bootstrap: BootstrapAddress): Body {
    const body: Body = withFields(client, bootstrapFields(client, bootstrap), { stream: false });
    delete body.stream_options;
    return body;
  },

  decodeBody(client: Body, bootstrap: BootstrapAddress): Body {
    return withFields(client, bootstrapFields(client, bootstrap));
  },

  promptTokensDetails(result: unknown) {
    return promptTokensDetailsOf(result);
  },
};

function bootstrapFields(client: Body, b: BootstrapAddress): Body {
  const batch = batchSize(client);
  const rooms = Array.isArray(b.room) ? b.room : [b.room];
  if (batch === undefined ? rooms.length !== 1 || Array.isArray(b.room) : rooms.length !== batch) {
    throw new RangeError(
      `the body needs ${batch === undefined ? 'one room' : `${batch} rooms (one per batch item)`}, got ${Array.isArray(b.room) ? `${rooms.length} rooms` : 'one room'}`,
    );
  }
  return { bootstrap_host: b.host, bootstrap_port: b.port, bootstrap_room: b.room };
}

/**
 * A completions prompt that is a list of prompts (token-id arrays or strings) is a batch; a
 * single token-id array, a string, or a chat body is one request.
 */
function batchSize(client: Body): number | undefined {
  const prompt = client.prompt;
  if (!Array.isArray(prompt) || prompt.length === 0) return undefined;
  if (prompt.every((p) => typeof p === 'string') || prompt.every((p) => Array.isArray(p))) return prompt.length;
  return undefined;
}
