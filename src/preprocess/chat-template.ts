// Chat templates are Jinja, as HuggingFace defines them (tokenizer_config.json's chat_template),
// rendered with @huggingface/jinja.
import { Template } from '@huggingface/jinja';
import { withFields } from '../util/objects.js';
import { describe } from '../util/validate.js';
import type { ChatMessage } from './types.js';

/** The built-in template of the simulated fleet: ChatML, which many open models use. */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

export class ChatTemplate {
  private readonly template: Template;

  constructor(
    source: string,
    private readonly specialTokens: Record<string, string> = {},
  ) {
    if (typeof source !== 'string' || source.length === 0) throw new TypeError('chat template must be a non-empty string');
    this.template = new Template(source);
  }

  render(messages: readonly ChatMessage[], addGenerationPrompt = true): string {
    return this.template.render({
      messages: messages as ChatMessage[],
      add_generation_prompt: addGenerationPrompt,
      ...this.specialTokens,
    });
  }
}

/**
 * Checks an OpenAI `messages` array and flattens content parts to text; the messages' other
 * fields go to the template as they are (as HuggingFace's apply_chat_template passes them).
 * Throws TypeError with a message fit for a 400 response.
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
