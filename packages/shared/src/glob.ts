/**
 * Globs of the listen filters and of the endpoint message list: `*` matches any run of characters
 * (`/` included), everything else matches itself, case-sensitively. `checkout.*` matches
 * `checkout.session.completed`; `/github/*` matches `/github/push/x`.
 */
export function globToRegExp(glob: string): RegExp {
  const source = glob
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'))
    .join('[\\s\\S]*');
  return new RegExp(`^${source}$`);
}

/** A comma-separated list of globs (`push,pull_request,checkout.*`) as one matcher; blanks dropped. */
export function globListToRegExp(list: string): RegExp {
  const globs = list
    .split(',')
    .map((g) => g.trim())
    .filter((g) => g.length > 0);
  return new RegExp(globs.map((g) => globToRegExp(g).source).join('|'));
}
