import { describe, expect, it } from 'vitest';
import { JsonPathScanner, type ScannedValue } from '../../src/ingest/json-scan.js';

/** What JSON.parse and a walk down the path say, in the scanner's terms (the reference). */
function reference(text: string, paths: string[][]): Map<number, ScannedValue> | 'invalid' {
  let doc: unknown;
  try {
    doc = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch {
    return 'invalid';
  }
  const found = new Map<number, ScannedValue>();
  paths.forEach((path, i) => {
    let current: unknown = doc;
    for (const segment of path) {
      if (Array.isArray(current)) {
        if (!/^\d+$/.test(segment) || Number(segment) >= current.length) return;
        current = current[Number(segment)];
      } else if (typeof current === 'object' && current !== null && Object.hasOwn(current, segment)) {
        current = (current as Record<string, unknown>)[segment];
      } else return;
    }
    if (typeof current === 'string') found.set(i, { kind: 'string', value: current });
    else if (typeof current === 'number' || typeof current === 'boolean') found.set(i, { kind: 'literal', text: 'x' });
    else found.set(i, { kind: 'other' });
  });
  return found;
}

function scan(bytes: Buffer, paths: string[][], cuts: number[]): Map<number, ScannedValue> {
  const scanner = new JsonPathScanner(paths);
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    scanner.write(bytes.subarray(at, cut));
    at = cut;
  }
  return scanner.end();
}

/** Literals compare by kind and by the number or boolean they denote. */
function normalise(found: Map<number, ScannedValue>): Record<number, unknown> {
  return Object.fromEntries([...found].map(([k, v]) => [k, v.kind === 'literal' ? 'literal' : v]));
}

let seed = 42;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

function value(depth: number): unknown {
  const r = random();
  if (depth > 4 || r < 0.3) return pick(['a', 'type', 'x"y', 'é\u2028', '\\n', 'line\nbreak', 1, -2.5e3, 0, true, false, null]);
  if (r < 0.6) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = Math.floor(random() * 4); i > 0; i--) o[pick(['type', 'event', 'a', 'b', 'data', 'ty\\pe', '0'])] = value(depth + 1);
  return o;
}

const PATHS = [['type'], ['event', 'type'], ['a', '0'], ['data', 'a', 'type'], ['0']];

describe('JsonPathScanner', () => {
  it('finds what JSON.parse finds at each path, for random documents cut at random places', () => {
    for (let n = 0; n < 2000; n++) {
      const text = JSON.stringify(value(0), null, random() < 0.5 ? 0 : 2);
      const bytes = Buffer.from(text);
      const cuts = Array.from({ length: 3 }, () => Math.floor(random() * bytes.length)).sort((a, b) => a - b);
      const expected = reference(text, PATHS);
      expect(expected).not.toBe('invalid');
      expect(normalise(scan(bytes, PATHS, cuts)), text).toEqual(normalise(expected as Map<number, ScannedValue>));
    }
  });

  it('finds nothing in documents that are not JSON, and takes a BOM and duplicate keys as JSON.parse does', () => {
    const bad = ['{"type":"a"', '{"type":"a",}', '[1,]', '{"type" "a"}', '{"type":"a"} x', '{"type":"a"}{}', '', ' ', '{"type":tru}', '{"a":1 "b":2}', '"\u0001"', '{]', '[}'];
    for (const text of bad) expect(scan(Buffer.from(text), PATHS, []).size, text).toBe(0);
    expect(scan(Buffer.from('\ufeff{"type":"bom"}'), PATHS, [1, 2])).toEqual(new Map([[0, { kind: 'string', value: 'bom' }]]));
    expect(scan(Buffer.from('{"type":"first","type":"last"}'), PATHS, [])).toEqual(new Map([[0, { kind: 'string', value: 'last' }]]));
    expect(scan(Buffer.from('{"type":12.5e2}'), PATHS, [])).toEqual(new Map([[0, { kind: 'literal', text: '12.5e2' }]]));
    expect(scan(Buffer.from('{"type":"\\u00e9v\\"t"}'), PATHS, [12])).toEqual(new Map([[0, { kind: 'string', value: 'év"t' }]]));
  });

  it('reads a large document in pieces, with the value after the bulk', () => {
    const doc = JSON.stringify({ id: 'evt_1', data: { items: Array.from({ length: 20000 }, (_, i) => ({ i, s: 'x'.repeat(50) })) }, type: 'invoice.paid' });
    const bytes = Buffer.from(doc);
    const cuts = Array.from({ length: Math.floor(bytes.length / 65536) }, (_, i) => (i + 1) * 65536);
    expect(scan(bytes, PATHS, cuts).get(0)).toEqual({ kind: 'string', value: 'invoice.paid' });
  });
});
