import type { EventTypeDeleteOut, EventTypeOut } from '@hookrelay/shared';
import { formatKeyValues } from './key-value.js';
import { formatJsonBlock } from './messages.js';
import type { Style } from './style.js';
import { formatTable } from './table.js';
import { terminalSafe, truncate } from './text.js';
import { formatTimestamp } from './time.js';

const DESCRIPTION_COLUMN_MAX = 60;

function statusLabel(archived: boolean, style: Style): string {
  return archived ? style.yellow('archived') : style.green('active');
}

/** One event type: its fields, then its schema and its example as JSON blocks. */
export function formatEventType(type: EventTypeOut, style: Style, now: Date): string {
  type = terminalSafe(type);
  const details = formatKeyValues(
    [
      ['Name', style.bold(type.name)],
      ['Description', type.description === '' ? style.dim('(none)') : type.description],
      ['Status', statusLabel(type.archived, style)],
      ['Created', formatTimestamp(type.created_at, now)],
      ['Updated', formatTimestamp(type.updated_at, now)],
    ],
    style,
  );
  const block = (title: string, value: unknown, none: string): string[] => [
    '',
    style.bold(title),
    value === null ? style.dim(none) : formatJsonBlock(value, style),
  ];
  return [
    details,
    ...block('Schema', type.schema, '(none)'),
    ...block('Example', type.example, '(none)'),
  ].join('\n');
}

/** The catalogue as a table, in the API's order (by name). */
export function formatEventTypeTable(types: readonly EventTypeOut[], style: Style): string {
  types = terminalSafe(types);
  return formatTable<EventTypeOut>(
    [
      { header: 'NAME', value: (t) => t.name },
      { header: 'STATUS', value: (t) => (t.archived ? 'archived' : 'active'), color: (text, t, s) => statusLabel(t.archived, s) },
      { header: 'SCHEMA', value: (t) => (t.schema === null ? '-' : 'yes') },
      { header: 'EXAMPLE', value: (t) => (t.example === null ? '-' : 'yes') },
      { header: 'DESCRIPTION', value: (t) => truncate(t.description, DESCRIPTION_COLUMN_MAX) },
    ],
    types,
    style,
  );
}

export function formatEventTypeDeleted(result: EventTypeDeleteOut, style: Style): string {
  result = terminalSafe(result);
  return `${style.green('Deleted')} event type ${result.name}`;
}
