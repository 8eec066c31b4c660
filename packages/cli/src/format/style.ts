import { Chalk, type ChalkInstance, type ColorInfo, type ColorSupportLevel } from 'chalk';
import type { Env } from '../config.js';

export type Style = ChalkInstance;

/**
 * Colour level for one output stream. NO_COLOR (any non-empty value, no-color.org) wins; then
 * FORCE_COLOR; otherwise colour only on a terminal, as far as the terminal supports it.
 */
export function colorLevel(env: Env, isTTY: boolean, detected: ColorInfo): ColorSupportLevel {
  const noColor = env.NO_COLOR;
  if (noColor !== undefined && noColor !== '') return 0;
  const force = env.FORCE_COLOR;
  if (force !== undefined) {
    if (force === '0' || force === 'false') return 0;
    if (force === '2') return 2;
    if (force === '3') return 3;
    return detected === false ? 1 : (Math.max(1, detected.level) as ColorSupportLevel);
  }
  if (!isTTY || env.TERM === 'dumb') return 0;
  return detected === false ? 0 : detected.level;
}

export function createStyle(level: ColorSupportLevel): Style {
  return new Chalk({ level });
}

/** For tests and for output that must never carry escapes. */
export const plainStyle: Style = createStyle(0);
