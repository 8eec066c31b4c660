import { afterEach } from 'vitest';

/**
 * After each test, Object.prototype, Array.prototype and Function.prototype have exactly the own
 * properties they had when the file started. A request that writes through `__proto__` or
 * `constructor.prototype` changes every object of the process, so it would show here whichever test
 * sent it. A change is undone before the test fails, so that the tests after it run on clean
 * prototypes and each failure names its own test.
 */
const GUARDED: [string, object][] = [
  ['Object.prototype', Object.prototype],
  ['Array.prototype', Array.prototype],
  ['Function.prototype', Function.prototype],
];
const baseline = new Map(GUARDED.map(([, proto]) => [proto, new Map(Reflect.ownKeys(proto).map((key) => [key, Object.getOwnPropertyDescriptor(proto, key)!]))]));

afterEach(() => {
  const changes: string[] = [];
  for (const [name, proto] of GUARDED) {
    const before = baseline.get(proto)!;
    const now = Reflect.ownKeys(proto);
    for (const key of now) {
      if (before.has(key)) continue;
      changes.push(`${name} gained ${String(key)}`);
      delete (proto as Record<PropertyKey, unknown>)[key];
    }
    for (const [key, descriptor] of before) {
      if (now.includes(key)) continue;
      changes.push(`${name} lost ${String(key)}`);
      Object.defineProperty(proto, key, descriptor);
    }
  }
  if (changes.length > 0) throw new Error(`the test changed a prototype: ${changes.join('; ')}`);
});
