// Chat templates are Jinja, as HuggingFace defines them (tokenizer_config.json's chat_template):
// compiled once and rendered natively as apply_chat_template renders them (src/core/chat-template.ts).
import { CompiledChatTemplate } from '../core/chat-template.js';
import { withFields } from '../util/objects.js';
import { describe } from '../util/validate.js';
import type { ChatMessage } from './types.js';

/** The built-in template of the simulated fleet: ChatML, which many open models use. */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** What a render reads besides the messages, as a chat request carries it. */
export interface ChatRenderExtras {
  /** The request's tools (HuggingFace passes None without them). */
  tools?: unknown;
  /** More template variables (vLLM's chat_template_kwargs). */
  chat_template_kwargs?: unknown;
}

export class ChatTemplate {
  /** The native template, which also reads chat requests straight from their bytes. */
  readonly compiled: CompiledChatTemplate;

  /**
   * `specialTokens`: the tokenizer's special tokens (bos_token, eos_token, ...), variables of
   * every render as apply_chat_template gives them. Throws when the template does not compile.
   */
  constructor(source: string, specialTokens: Record<string, string | string[]> = {}) {
    this.compiled = new CompiledChatTemplate(source, specialTokens);
  }

  /** Messages as parseChatMessages returns them. Throws ChatRenderError when the template refuses them. */
  render(messages: readonly ChatMessage[], addGenerationPrompt = true, extras: ChatRenderExtras = {}): string {
    return this.compiled.render(withFields(extras, { messages, add_generation_prompt: addGenerationPrompt }));
  }
}

/**
 * Checks an OpenAI `messages` array and flattens content parts to text; the messages' other
 * fields go to the template as they are (as HuggingFace's apply_chat_template passes them).
 * Throws TypeError with a message fit for a 400 response. native/src/chat/request.rs reads the
 * messages of a request body the same way.
 */
export function parseChatMessages(value: unknown): ChatMessage[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new TypeError(`'messages' must be a non-empty array, got ${describe(value)}`);
  }
  return value.map((m: unknown, i) => {
    if (!m || typeof m !== 'object' || Array.isArray(m)) throw new TypeError(`messages[${i}] must be an object`);
    const { role, content } = m as { role?: unknown; content?: unknown };
    if (typeof role !== 'string' || role.length === 0) throw new TypeError(`messages[${i}].role must be a non-empty string`);
    return withFields(m as Record<string, unknown>, { role, content: contentText(content, i) });
  });
}

function contentText(content: unknown, i: number): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  if (Array.isArray(content)) {
    return content
      .map((part: unknown, j) => {
        const p = part as { type?: unknown; text?: unknown };
        if (!p || typeof p !== 'object' || p.type !== 'text' || typeof p.text !== 'string') {
          throw new TypeError(`messages[${i}].content[${j}] must be a text part ({type: 'text', text})`);
        }
        return p.text;
      })
      .join('');
  }
  throw new TypeError(`messages[${i}].content must be a string or an array of text parts`);
}
