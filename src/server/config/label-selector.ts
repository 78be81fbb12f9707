// The syntax of a Kubernetes label selector (apimachinery's labels.Parse), checked before any
// request so a typo is a startup error that points at it, not a 400 from the API server later:
// requirements separated by commas, each `key`, `!key`, `key=value` (`==`, `!=`), `key in (a,b)`,
// `key notin (a,b)`, or `key>N` / `key<N`.

/** A label name: at most 63 characters, alphanumeric at both ends, `-`, `_` and `.` inside. */
const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
/** A DNS subdomain (a key's prefix). */
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Throws a TypeError naming the first mistake of `selector` (`where` names the setting). */
export function checkLabelSelector(selector: string, where: string): void {
  const fail = (what: string): never => {
    throw new TypeError(`${where} is not a label selector (${what}): '${selector}'`);
  };
  if (selector.trim() === '') fail('it is empty');
  for (const requirement of splitRequirements(selector, fail)) {
    const r = requirement.trim();
    if (r === '') fail('an empty requirement between commas');
    const set = /^([^\s!=<>(),]+)\s+(in|notin)\s*\((.*)\)$/.exec(r);
    if (set) {
      checkKey(set[1], fail);
      const values = set[3].split(',').map((v) => v.trim());
      if (values.length === 1 && values[0] === '') fail(`'${set[1]} ${set[2]}' needs at least one value`);
      for (const v of values) checkValue(v, fail);
      continue;
    }
    const op = /^([^\s!=<>(),]+)\s*(==|=|!=|<|>)\s*(\S*)$/.exec(r);
    if (op) {
      checkKey(op[1], fail);
      if ((op[2] === '<' || op[2] === '>') && !/^-?\d+$/.test(op[3])) fail(`'${op[1]} ${op[2]}' needs an integer`);
      else checkValue(op[3], fail);
      continue;
    }
    const exists = /^(!?)\s*([^\s!=<>(),]+)$/.exec(r);
    if (exists) {
      checkKey(exists[2], fail);
      continue;
    }
    fail(`'${r}' is not key, !key, key=value, key!=value, key in (...) or key notin (...)`);
  }
}

/** The requirements: split at the commas outside parentheses. */
function splitRequirements(selector: string, fail: (what: string) => never): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    if (depth < 0 || depth > 1) fail('unbalanced parentheses');
    if (c === ',' && depth === 0) {
      out.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  if (depth !== 0) fail('unbalanced parentheses');
  out.push(selector.slice(start));
  return out;
}

function checkKey(key: string, fail: (what: string) => never): void {
  const slash = key.indexOf('/');
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (slash >= 0) {
    const prefix = key.slice(0, slash);
    if (prefix.length === 0 || prefix.length > 253 || !SUBDOMAIN.test(prefix)) fail(`the key prefix '${prefix}' is not a DNS subdomain`);
  }
  if (name.length > 63 || !NAME.test(name)) fail(`the key '${key}' is not a label name (at most 63 letters, digits, -, _ or ., alphanumeric at both ends)`);
}

function checkValue(value: string, fail: (what: string) => never): void {
  if (value === '') return;
  if (value.length > 63 || !NAME.test(value))
    fail(`the value '${value}' is not a label value (at most 63 letters, digits, -, _ or ., alphanumeric at both ends)`);
}
