/**
 * "Did you mean …" for a mistyped command or flag: the closest known name, if one is close enough
 * to be a typo rather than another word. Damerau–Levenshtein (optimal string alignment) counts a
 * swapped pair of letters as one edit, the commonest slip (`wiat`, `tiemout`).
 */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/** A third of the word may be wrong (at least one letter): `lisen` finds `listen`, `ls` finds nothing. */
function closeEnough(word: string, distance: number): boolean {
  return distance <= Math.max(1, Math.floor(word.length / 3));
}

/** The known name closest to `word`, when it is close enough; ties go to the first candidate. */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of candidates) {
    const distance = editDistance(word, name);
    if (closeEnough(word, distance) && (best === undefined || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

/**
 * The command a mistyped one was meant to be, with the words typed after it kept: oclif hands over
 * everything typed (`mesages:wait:ID`), so each command is compared with as many words as it has,
 * each word on its own.
 * Words are `:`-separated, as oclif's ids are; the answer is too.
 */
export function suggestCommand(typed: string, commandIds: readonly string[]): string | undefined {
  const words = typed.split(':');
  let best: { id: string; rest: string[]; distance: number } | undefined;
  for (const id of commandIds) {
    const parts = id.split(':');
    const length = parts.length;
    if (length > words.length) continue;
    // Word by word: a right topic does not make room for a wrong verb (`endpoints frobnicate`).
    const distances = parts.map((part, index) => editDistance(words[index]!, part));
    if (!distances.every((d, index) => closeEnough(words[index]!, d))) continue;
    const distance = distances.reduce((sum, d) => sum + d, 0);
    if (distance === 0) continue;
    if (best === undefined || distance < best.distance || (distance === best.distance && length > best.id.split(':').length)) {
      best = { id, rest: words.slice(length), distance };
    }
  }
  return best === undefined ? undefined : [best.id, ...best.rest].join(':');
}

/**
 * oclif's refusal of unknown flags (`Nonexistent flags: -z, --tiemout=3s`) with the flag each was
 * probably meant to be: `Nonexistent flags: -z, --tiemout=3s (did you mean --timeout?)`.
 */
export function suggestFlags(typed: readonly string[], flagNames: readonly string[]): string {
  const described = typed.map((flag) => {
    const name = /^--([^=]+)/u.exec(flag)?.[1];
    const match = name === undefined ? undefined : closest(name, flagNames);
    return match === undefined ? flag : `${flag} (did you mean --${match}?)`;
  });
  return `Nonexistent flag${typed.length === 1 ? '' : 's'}: ${described.join(', ')}`;
}
