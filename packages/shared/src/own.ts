/**
 * Reading and writing by a name that input chose. A plain object inherits from Object.prototype, so
 * `bag[name]` finds `constructor` or `toString` for names nobody set, and `bag['__proto__'] = v`
 * replaces the object's prototype instead of storing a field. Maps keyed by received names are
 * null-prototype objects, and decisions read a bag's own properties only.
 */

/** An empty map with no prototype: every name, `__proto__` included, is an ordinary key. */
export function emptyRecord<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

/** `bag[key]` when `bag` itself holds it, else undefined (never an inherited value). */
export function ownValue<T extends object, K extends keyof T>(bag: T, key: K): T[K] | undefined {
  return Object.hasOwn(bag, key) ? bag[key] : undefined;
}
