// A chat template compiled once and rendered natively (native/src/chat, MiniJinja set up as
// HuggingFace's apply_chat_template): from JavaScript messages, or straight from a chat request's
// bytes, rendered and tokenized in one call.
import { native, type Binding } from './binding.js';
import { NativeErrorCode, nativeErrorCode, translateNativeError } from './errors.js';
import type { ScannedPrompt } from './prompt-scan.js';
import { fromEncodedBody, scannedIds, type NativeTextTokenizer } from './tokenizer.js';
import { expectUint8Array } from '../util/validate.js';

/** The template refused a conversation (raise_exception, a type error on these messages): the client's doing. */
export class ChatRenderError extends Error {
  override name = 'ChatRenderError';
}

const span = new Uint32Array(2);

/** String.prototype.toWellFormed (Node 20; ES2024, past this project's lib). */
type WellFormed = string & { toWellFormed(): string };

export class CompiledChatTemplate {
  private readonly inner: Binding.NativeChatTemplate;

  /** Compiles `source`; `globals` are the variables every render gets (the special tokens). Throws when it does not compile. */
  constructor(source: string, globals: Record<string, unknown> = {}) {
    if (typeof source !== 'string' || source.length === 0) throw new TypeError('chat template must be a non-empty string');
    this.inner = new native.NativeChatTemplate(source, JSON.stringify(globals));
  }

  /**
   * Renders a chat request shaped object (`messages`, optional `tools`, `chat_template_kwargs`,
   * `add_generation_prompt`). Lone surrogates become U+FFFD, as they do on their way to the tokenizer.
   */
  render(input: Record<string, unknown>): string {
    const json = JSON.stringify(input, (_key, value: unknown) => (typeof value === 'string' ? (value as WellFormed).toWellFormed() : value));
    return rendered(() => this.inner.renderJson(Buffer.from(json)));
  }

  /** A chat request body's prompt text and where its messages stand; undefined when the body is not the plain case. */
  renderBody(body: Uint8Array): { text: string; start: number; end: number } | undefined {
    expectUint8Array(body, 'body');
    const text = rendered(() => this.inner.renderBody(body, span));
    return text === null ? undefined : { text, start: span[0], end: span[1] };
  }

  /** A chat request body rendered and tokenized in one native call; undefined when the body is not the plain case. */
  encodeBody(tokenizer: NativeTextTokenizer, body: Uint8Array): ScannedPrompt | undefined {
    expectUint8Array(body, 'body');
    return rendered(() => scannedIds(tokenizer.binding, (out, where, times) => this.inner.encodeBody(tokenizer.binding, body, out, where, times)));
  }

  /** encodeBody on a libuv thread (the body is copied first), through the tokenizer's prefix cache when it has one. */
  async encodeBodyAsync(tokenizer: NativeTextTokenizer, body: Uint8Array): Promise<ScannedPrompt | undefined> {
    expectUint8Array(body, 'body');
    try {
      return fromEncodedBody(await this.inner.encodeBodyAsync(tokenizer.binding, body));
    } catch (err) {
      throw renderFailure(err);
    }
  }
}

/** Runs a render: the template's own refusals become a ChatRenderError, bad arguments a TypeError or RangeError. */
function rendered<T>(call: () => T): T {
  try {
    return call();
  } catch (err) {
    throw renderFailure(err);
  }
}

function renderFailure(err: unknown): unknown {
  return nativeErrorCode(err) === NativeErrorCode.chatTemplate ? new ChatRenderError((err as Error).message) : translateNativeError(err);
}
