// How deeply a parsed JSON value nests. JSON.parse takes any depth, but what runs on the value
// afterwards often recurses (JSON.stringify of a body for the engine among them): a client's
// 100,000-deep array would end in a stack overflow far from the cause. Bodies are refused above a
// limit instead, right after parsing.

/** Whether `value` nests arrays and objects more than `limit` levels deep (a flat object is 1). */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  return typeof value === 'object' && value !== null && deeper(value, limit - 1);
}

/** `node`'s children nest more than `left` levels. Recursion stops at the limit, so the stack stays short. */
function deeper(node: object, left: number): boolean {
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const child: unknown = node[i];
      if (typeof child === 'object' && child !== null && (left === 0 || deeper(child, left - 1))) return true;
    }
    return false;
  }
  for (const key in node) {
    const child: unknown = (node as Record<string, unknown>)[key];
    if (typeof child === 'object' && child !== null && (left === 0 || deeper(child, left - 1))) return true;
  }
  return false;
}
