// Text of generated tokens, streamed piece by piece. Byte tokens (ids < 256) decode as UTF-8 with
// split characters held back, so the text re-tokenizes to the same ids with the byte tokenizer
// (follow-up turns of a conversation hit the blocks the engine cached for its output). Ids of a
// larger vocabulary have no text of their own: each renders as one printable ASCII character.
import { BYTE_VOCAB_SIZE, ByteStreamDecoder } from '../../preprocess/byte-tokenizer.js';

const PRINTABLE_FIRST = 0x20;
const PRINTABLE_COUNT = 0x7f - PRINTABLE_FIRST;

export class GeneratedText {
  private readonly decoder = new ByteStreamDecoder();

  push(tokenId: number): string {
    if (tokenId >= 0 && tokenId < BYTE_VOCAB_SIZE) return this.decoder.push([tokenId]);
    return this.decoder.push([PRINTABLE_FIRST + (tokenId % PRINTABLE_COUNT)]);
  }

  end(): string {
    return this.decoder.end();
  }
}
