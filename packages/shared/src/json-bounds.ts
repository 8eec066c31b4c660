/**
 * Bounds on JSON values that come from request bodies. A 1 MiB body may nest 500,000 levels:
 * JSON.stringify, and any recursive walk, would overflow the stack on it (a 500, not a 400), so the
 * depth is measured first, with an explicit stack.
 */

/** Whether arrays and objects in `value` nest more than `limit` levels (a scalar is level 0). */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth + 1 > limit) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

const utf8 = new TextEncoder();

/** The UTF-8 bytes of `value` as JSON text. Only for a value within a depth bound (above). */
export function jsonByteLength(value: unknown): number {
  return utf8.encode(JSON.stringify(value)).length;
}

/**
 * Why `value` is out of bounds (too deep, or too many bytes as JSON text), or null when it is
 * within them. The message reads after the field's name.
 */
export function jsonBoundsProblem(value: unknown, bounds: { maxDepth: number; maxBytes: number }): string | null {
  if (nestsDeeperThan(value, bounds.maxDepth)) return `must not nest arrays and objects more than ${bounds.maxDepth} levels deep`;
  const bytes = jsonByteLength(value);
  if (bytes > bounds.maxBytes) return `must be at most ${bounds.maxBytes} bytes as JSON (is ${bytes})`;
  return null;
}
