import type { Style } from './style.js';
import { padEnd } from './text.js';

/** A label and its value; `undefined` values are left out, so callers can list optional fields. */
export type Pair = readonly [label: string, value: string | undefined];

/** Labels in one dimmed, aligned column, values after them. */
export function formatKeyValues(pairs: readonly Pair[], style: Style): string {
  const present = pairs.filter((pair): pair is readonly [string, string] => pair[1] !== undefined);
  const width = Math.max(0, ...present.map(([label]) => label.length + 1));
  return present.map(([label, value]) => `${padEnd(style.dim(`${label}:`), width)}  ${value}`).join('\n');
}
