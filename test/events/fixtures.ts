// Byte fixtures in PROTOCOLS.md's notation: hex bytes and "quoted" strings (a quoted string stands
// for its UTF-8 bytes). Whitespace separates nothing: it is only for reading.

export function msgpackBytes(notation: string): Buffer {
  const parts: Buffer[] = [];
  for (const m of notation.matchAll(/"([^"]*)"|([0-9a-fA-F]+)|(\S)/g)) {
    if (m[3] !== undefined) throw new Error(`bad fixture notation near '${m[3]}'`);
    if (m[2] !== undefined && m[2].length % 2 !== 0) throw new Error(`odd hex digit count in '${m[2]}'`);
    parts.push(m[1] !== undefined ? Buffer.from(m[1], 'utf8') : Buffer.from(m[2], 'hex'));
  }
  return Buffer.concat(parts);
}

/** A msgpack str header + bytes for a short string (fixstr), in the notation above. */
export const s = (text: string): string => {
  const len = Buffer.byteLength(text);
  if (len > 31) throw new Error('fixture helper handles fixstr only');
  return `${(0xa0 | len).toString(16)}"${text}"`;
};

/** The batch timestamp of the PROTOCOLS.md examples (cb41da305498100000). */
export const EXAMPLE_TS = Buffer.from('41da305498100000', 'hex').readDoubleBE(0);

/** PROTOCOLS.md section 2, verbatim: a map-encoded event inside an array batch. */
export const MAP_EXAMPLE = `93 cb41da305498100000 91 8a a4"type" ab"BlockStored" ac"block_hashes" 91 cfdeadbeef12345678
b1"parent_block_hash" c0 a9"token_ids" 94 01020304 aa"block_size" 04 a7"lora_id" c0 a6"medium"
a3"GPU" a9"lora_name" c0 a9"group_idx" 00 b2"kv_cache_spec_kind" ae"full_attention" 00`;

/** PROTOCOLS.md section 2, verbatim: the same batch positional. */
export const ARRAY_EXAMPLE = `93 cb41da305498100000 91 97 ab"BlockStored" 91 cfdeadbeef12345678 c0
94 01020304 04 c0 a3"GPU" 00`;
