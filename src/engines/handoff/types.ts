// What a prefill/decode handoff adapter does for its engine kind (PROTOCOLS.md section 3). Two
// shapes exist: sequential (vLLM NIXL, TensorRT-LLM: prefill first, its answer feeds decode) and
// bootstrap (SGLang: both legs at once, meeting by room at the prefill worker's bootstrap port).
// Adapters are pure: bodies in, bodies out; the routers do the I/O.
import type { EngineKind } from '../types.js';

export type Body = Record<string, unknown>;

/** What the prefill leg's answer says. */
export type PrefillOutcome =
  | {
      kind: 'handoff';
      /** The engine's transfer state, handed to the decode leg as it came. */
      params: Record<string, unknown>;
      /** The prefill's usage.prompt_tokens_details (its own prefix-cache hits), for the client's final usage. */
      promptTokensDetails?: Record<string, unknown>;
    }
  | {
      kind: 'finished';
      /** Prefill already completed the request (EOS): this is the client's answer. */
      response: Body;
    };

export interface SequentialHandoff {
  readonly kind: Exclude<EngineKind, 'sglang'>;
  readonly mode: 'sequential';
  /** The prefill leg: one token, not streamed, with the engine's "prefill only" marker. */
  prefillBody(client: Body): Body;
  /** Reads the prefill answer; throws EngineError when it breaks the protocol. */
  interpretPrefill(result: unknown, engine: string): PrefillOutcome;
  /** The decode leg: the client's body with the transfer state injected. */
  decodeBody(client: Body, outcome: Extract<PrefillOutcome, { kind: 'handoff' }>): Body;
}

export interface BootstrapAddress {
  host: string;
  port: number;
  /** One room, or one per item of a batched prompt. */
  room: bigint | bigint[];
}

export interface BootstrapHandoff {
  readonly kind: 'sglang';
  readonly mode: 'bootstrap';
  /** The body's room: one, or one per item of a batched prompt, each from `makeRoom`. */
  rooms(client: Body, makeRoom: () => bigint): bigint | bigint[];
  prefillBody(client: Body, bootstrap: BootstrapAddress): Body;
  decodeBody(client: Body, bootstrap: BootstrapAddress): Body;
  /** The drained prefill answer's usage.prompt_tokens_details, if any. */
  promptTokensDetails(result: unknown): Record<string, unknown> | undefined;
}

export type HandoffAdapter = SequentialHandoff | BootstrapHandoff;

export type { EngineKind };
