/**
 * What "Edit and replay" sends (docs/api.md, Edited replays): the header table and the body editor
 * compared with the message as it came, turned into the replay's `{ body, headers, resign }`. Only
 * what changed is sent, so a table left as it was edits nothing and the server keeps each line.
 */

/** One line of the header table. */
export interface HeaderRow {
  name: string;
  value: string;
}

export interface ReplayEdits {
  body?: string;
  headers?: Record<string, string | null>;
  resign?: boolean;
}

export type EditsOrProblem = { edits: ReplayEdits | null; problem: null } | { edits: null; problem: string };

/** Lines grouped by name, case-insensitively, in their order: the spelling of the first, and every value. */
function byName(lines: readonly HeaderRow[]): Map<string, { name: string; values: string[] }> {
  const groups = new Map<string, { name: string; values: string[] }>();
  for (const line of lines) {
    const key = line.name.toLowerCase();
    const group = groups.get(key);
    if (group) group.values.push(line.value);
    else groups.set(key, { name: line.name, values: [line.value] });
  }
  return groups;
}

/**
 * The header edits that turn `original` into `rows`: a name whose lines changed takes its one new
 * value (the API replaces every line of a name with one), a name no longer there is removed (null).
 * Blank rows are ignored. Several lines of one name that differ from the original's are a problem:
 * the copy could not carry them.
 */
export function headerEdits(original: readonly [string, string][], rows: readonly HeaderRow[]): { edits: Map<string, string | null>; problem: string | null } {
  const kept = rows.map((row) => ({ name: row.name.trim(), value: row.value })).filter((row) => row.name !== '' || row.value !== '');
  const edits = new Map<string, string | null>();
  const unnamed = kept.find((row) => row.name === '');
  if (unnamed) return { edits, problem: `the header line with the value “${unnamed.value}” needs a name` };
  const before = byName(original.map(([name, value]) => ({ name, value })));
  const after = byName(kept);
  for (const [key, group] of after) {
    const old = before.get(key);
    if (old && old.values.length === group.values.length && old.values.every((value, i) => value === group.values[i])) continue;
    if (group.values.length > 1) return { edits, problem: `${group.name}: one value per header name (a replay replaces every line of a name with one)` };
    edits.set(group.name, group.values[0]!);
  }
  for (const [key, group] of before) if (!after.has(key)) edits.set(group.name, null);
  return { edits, problem: null };
}

/**
 * The replay's edits from the editor's state: `body` when the text differs from what it started
 * with (and parses, when the body is JSON), the header edits, and `resign` when asked. null: no edit.
 */
export function replayEdits(input: {
  originalHeaders: readonly [string, string][];
  rows: readonly HeaderRow[];
  /** The body as the editor started with it; null when the body cannot be edited here. */
  initialBody: string | null;
  body: string;
  json: boolean;
  resign: boolean;
}): EditsOrProblem {
  const headers = headerEdits(input.originalHeaders, input.rows);
  if (headers.problem !== null) return { edits: null, problem: headers.problem };
  const edits: ReplayEdits = {};
  if (input.initialBody !== null && input.body !== input.initialBody) {
    if (input.json) {
      try {
        JSON.parse(input.body);
      } catch (error) {
        return { edits: null, problem: `the body is not JSON: ${error instanceof Error ? error.message : String(error)}` };
      }
    }
    edits.body = input.body;
  }
  // Object.fromEntries defines each name as an own property, whatever it is (`__proto__` included).
  if (headers.edits.size > 0) edits.headers = Object.fromEntries(headers.edits);
  if (edits.body === undefined && edits.headers === undefined) return { edits: null, problem: null };
  if (input.resign) edits.resign = true;
  return { edits, problem: null };
}
