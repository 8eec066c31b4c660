import type { PortalLinkCreateOut, PortalLinkOut } from '@hookrelay/shared';
import { formatKeyValues } from './key-value.js';
import type { Style } from './style.js';
import { formatTable } from './table.js';
import { terminalSafe } from './text.js';
import { formatTimestamp } from './time.js';

/** A link's state now: revoked, expired or active (until its expiry). */
function stateOf(link: PortalLinkOut, now: Date): 'revoked' | 'expired' | 'active' {
  if (link.revoked_at !== undefined) return 'revoked';
  return Date.parse(link.expires_at) <= now.getTime() ? 'expired' : 'active';
}

function stateLabel(state: ReturnType<typeof stateOf>, style: Style): string {
  return state === 'active' ? style.green(state) : state === 'revoked' ? style.red(state) : style.yellow(state);
}

/** The new link: its URL alone on stdout's first line (for a script's `| head -1`), then what it allows. */
export function formatPortalLinkCreated(link: PortalLinkCreateOut, style: Style, now: Date): string {
  link = terminalSafe(link);
  const details = formatKeyValues(
    [
      ['Owner', style.bold(link.owner_id)],
      ['Access', link.read_only ? 'read-only' : 'read and write'],
      ['Expires', formatTimestamp(link.expires_at, now)],
      ['Id', link.id],
    ],
    style,
  );
  return [link.url, '', details, '', style.dim('The URL is shown only now; revoke it with `hookrelay portal-links revoke ' + link.id + '`.')].join('\n');
}

export function formatPortalLinkTable(links: readonly PortalLinkOut[], style: Style, now: Date): string {
  links = terminalSafe(links);
  return formatTable<PortalLinkOut>(
    [
      { header: 'ID', value: (l) => l.id },
      { header: 'OWNER', value: (l) => l.owner_id },
      { header: 'ACCESS', value: (l) => (l.read_only ? 'read-only' : 'read-write') },
      { header: 'STATE', value: (l) => stateOf(l, now), color: (_text, l, s) => stateLabel(stateOf(l, now), s) },
      { header: 'EXPIRES', value: (l) => formatTimestamp(l.expires_at, now) },
    ],
    links,
    style,
  );
}

export function formatPortalLinkRevoked(link: PortalLinkOut, style: Style): string {
  link = terminalSafe(link);
  return `${style.green('Revoked')} portal link ${link.id} of ${link.owner_id}: its URL no longer opens the portal`;
}
