import type { Style } from './style.js';
import { terminalSafe, terminalText } from './text.js';

/** One entry of a batch answer: its id under `idField` and an outcome. */
export type BatchEntry<K extends string> = { [P in K]: string } & { outcome: string };

/** Outcomes that did what was asked read green; "nothing there" yellow; "done before" dim. */
function colourOutcome(outcome: string, style: Style): string {
  if (outcome === 'deleted' || outcome === 'delivered') return style.green(outcome);
  if (outcome === 'not_found') return style.yellow(outcome);
  return style.dim(outcome);
}

/** One line per id with its outcome, then the summary line (`3 deleted, 1 not found`). */
export function formatBatchOutcomes<K extends string>(
  results: readonly BatchEntry<K>[],
  idField: K,
  summary: string,
  style: Style,
): string {
  results = terminalSafe(results);
  summary = terminalText(summary);
  const lines = results.map((entry) => `${entry[idField]}  ${colourOutcome(entry.outcome, style)}`);
  lines.push(summary);
  return lines.join('\n');
}
