/**
 * Globs of the listen filters, of the endpoint message list and of endpoint subscriptions: `*`
 * matches any run of characters (`/` included), everything else matches itself, case-sensitively.
 * `checkout.*` matches `checkout.session.completed`; `/github/*` matches `/github/push/x`.
 */

/**
 * A glob as a predicate that never backtracks: the text before the first `*` must begin the value,
 * the text after the last one must end it, and the pieces between must appear in order in what is
 * left, each at its leftmost place (which is always right for `*`-only globs). Linear in the value
 * for each piece, whatever the glob, so a filter from a request cannot cost the server a regular
 * expression's exponential backtracking.
 */
export function globMatcher(glob: string): (value: string) => boolean {
  const pieces = glob.split('*');
  if (pieces.length === 1) return (value) => value === glob;
  const head = pieces[0]!;
  const tail = pieces[pieces.length - 1]!;
  const middle = pieces.slice(1, -1);
  return (value) => {
    if (value.length < head.length + tail.length || !value.startsWith(head) || !value.endsWith(tail)) return false;
    const end = value.length - tail.length;
    let at = head.length;
    for (const piece of middle) {
      const found = value.indexOf(piece, at);
      if (found === -1 || found + piece.length > end) return false;
      at = found + piece.length;
    }
    return true;
  };
}

/** A comma-separated list of globs (`push,pull_request,checkout.*`) as one predicate; blanks dropped. */
export function globListMatcher(list: string): (value: string) => boolean {
  const matchers = list
    .split(',')
    .map((glob) => glob.trim())
    .filter((glob) => glob.length > 0)
    .map(globMatcher);
  return (value) => matchers.some((matches) => matches(value));
}

/** The same glob as a regular expression, for short globs the caller wrote itself (a config file). */
export function globToRegExp(glob: string): RegExp {
  const source = glob
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'))
    .join('[\\s\\S]*');
  return new RegExp(`^${source}$`);
}

/**
 * The same glob as a SQL `LIKE` pattern under `ESCAPE '\'`: `*` becomes `%`, and `%`, `_` and `\`
 * stand for themselves. The database matches endpoint subscriptions with it, so that a stored glob
 * and a listen filter mean the same thing.
 */
export function globToLikePattern(glob: string): string {
  return glob
    .split('*')
    .map((part) => part.replace(/[\\%_]/g, '\\$&'))
    .join('%');
}

/** The text before a glob's first `*` (the whole glob without one): every value it matches starts with it. */
export function globLiteralPrefix(glob: string): string {
  const star = glob.indexOf('*');
  return star === -1 ? glob : glob.slice(0, star);
}

/**
 * Every prefix of `value` from the empty one to the whole, cut between code points (never inside a
 * surrogate pair): the literal prefixes a glob matching `value` can have.
 */
export function prefixesOf(value: string): string[] {
  const prefixes = [''];
  let at = 0;
  for (const char of value) {
    at += char.length;
    prefixes.push(value.slice(0, at));
  }
  return prefixes;
}
