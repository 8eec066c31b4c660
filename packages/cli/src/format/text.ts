import { stripVTControlCharacters } from 'node:util';

/** Width on screen: escapes take no room. */
export function visibleWidth(text: string): number {
  return stripVTControlCharacters(text).length;
}

export function padEnd(text: string, width: number): string {
  const missing = width - visibleWidth(text);
  return missing > 0 ? text + ' '.repeat(missing) : text;
}

/** Cut plain text to `max` characters, marking the cut. */
export function truncate(text: string, max: number): string {
  if (max < 2 || text.length <= max) return text;
  return `${text.slice(0, max - 1)}…`;
}
