// What the router needs to know of most streamed chunks is their shape, not their content: does
// the chunk carry output (a non-empty top-level `choices`), usage or an error? One scan of the
// chunk's text answers that without building the parsed object, which a long stream would
// otherwise pay for on every token. Anything the scan cannot read (not a JSON object, cut short)
// is UNKNOWN_SHAPE, and callers then parse the chunk.

/** The top-level `choices` is a non-empty array. */
export const SHAPE_TOKEN = 1;
/** The top-level `usage` is present and not null. */
export const SHAPE_USAGE = 2;
/** The top-level `error` is present and not null. */
export const SHAPE_ERROR = 4;
/** The text is not a JSON object the scan could read: parse it to know. */
export const UNKNOWN_SHAPE = -1;

const QUOTE = 34;
const BACKSLASH = 92;
const COLON = 58;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;
const LETTER_N = 110;

/**
 * SHAPE_* flags of a chunk's JSON text, or UNKNOWN_SHAPE. Keys are matched as written (a key
 * spelled with escapes is not recognised); when a key repeats, its first occurrence counts.
 */
export function chunkShape(text: string): number {
  const n = text.length;
  let i = skipSpace(text, 0);
  if (i >= n || text.charCodeAt(i) !== OPEN_BRACE) return UNKNOWN_SHAPE;
  let shape = 0;
  let seen = 0; // the keys already decided (first occurrence wins)
  let depth = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const start = i + 1;
      i = stringEnd(text, start);
      if (i < 0) return UNKNOWN_SHAPE;
      const len = i - start;
      i++;
      if (depth !== 1 || (len !== 7 && len !== 5)) continue;
      const key =
        len === 7 && text.startsWith('choices', start)
          ? SHAPE_TOKEN
          : len === 5 && text.startsWith('usage', start)
            ? SHAPE_USAGE
            : len === 5 && text.startsWith('error', start)
              ? SHAPE_ERROR
              : 0;
      if (key === 0 || (seen & key) !== 0) continue;
      const colon = skipSpace(text, i);
      if (colon >= n) return UNKNOWN_SHAPE;
      if (text.charCodeAt(colon) !== COLON) continue; // a string value, not a key
      const value = skipSpace(text, colon + 1);
      if (value >= n) return UNKNOWN_SHAPE;
      seen |= key;
      const v = text.charCodeAt(value);
      if (key === SHAPE_TOKEN) {
        if (v !== OPEN_BRACKET) continue; // not an array: no output
        const first = skipSpace(text, value + 1);
        if (first >= n) return UNKNOWN_SHAPE;
        if (text.charCodeAt(first) !== CLOSE_BRACKET) shape |= SHAPE_TOKEN;
      } else if (v !== LETTER_N) {
        shape |= key;
      }
      i = value; // the value itself is scanned as usual (its brackets count)
      continue;
    }
    if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
      if (depth === 0) return shape;
    }
    i++;
  }
  return UNKNOWN_SHAPE;
}

/** Index of the closing quote of the string whose content starts at `i`, or -1. */
function stringEnd(text: string, i: number): number {
  for (;;) {
    const q = text.indexOf('"', i);
    if (q < 0) return -1;
    let b = q - 1;
    while (b >= i && text.charCodeAt(b) === BACKSLASH) b--;
    if ((q - 1 - b) % 2 === 0) return q; // an even run of backslashes escapes only itself
    i = q + 1;
  }
}

function skipSpace(text: string, i: number): number {
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c !== 32 && c !== 10 && c !== 13 && c !== 9) return i;
    i++;
  }
  return i;
}
