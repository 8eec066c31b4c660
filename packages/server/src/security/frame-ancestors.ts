/**
 * An origin as CSP's frame-ancestors takes it, or undefined: http(s), a host, maybe a port, nothing
 * after. Anything else (a path, a query, a quote, `*`) could widen or break the policy it is put in.
 */
export function parseFrameAncestor(entry: string): string | undefined {
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') return undefined;
  if (url.pathname !== '/') return undefined;
  return url.origin;
}
