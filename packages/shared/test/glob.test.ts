import { describe, expect, it } from 'vitest';
import { globListMatcher, globLiteralPrefix, globMatcher, globToLikePattern, globToRegExp, prefixesOf } from '../src/glob.js';

describe('globMatcher', () => {
  it('never lets a middle piece overlap the tail or the head', () => {
    const cases: [string, string, boolean][] = [
      // `b` is in `ab` only where the tail needs it: the middle piece has no room of its own.
      ['a*b*b', 'ab', false],
      ['a*b*b', 'abb', true],
      ['a*bc*c', 'abc', false],
      ['a*bc*c', 'abcc', true],
      ['a*ab*b', 'ab', false],
      ['a*ab*b', 'aab', false],
      ['a*ab*b', 'aabb', true],
      ['x*abc*', 'xab', false],
      ['*a*', 'a', true],
      ['*a*', 'b', false],
      ['a**b', 'ab', true],
      ['a***b', 'axb', true],
      ['a*', 'a', true],
      ['*a', '', false],
    ];
    for (const [glob, value, expected] of cases) {
      expect(globMatcher(glob)(value), `${glob} ~ ${value}`).toBe(expected);
      expect(globToRegExp(glob).test(value), `${glob} ~ ${value} as a regular expression`).toBe(expected);
    }
  });

  it('a glob without * is the value itself', () => {
    expect(globMatcher('push')('push')).toBe(true);
    expect(globMatcher('push')('push ')).toBe(false);
    expect(globMatcher('')('')).toBe(true);
    expect(globMatcher('')('x')).toBe(false);
  });
});

describe('globListMatcher', () => {
  it('drops blank entries, so a list of commas and spaces matches nothing, not the empty event type', () => {
    expect(globListMatcher(' , ,')('')).toBe(false);
    expect(globListMatcher('push,,')('')).toBe(false);
    expect(globListMatcher('push,,')('push')).toBe(true);
    expect(globListMatcher(' push ')('push')).toBe(true);
  });
});

describe('globToLikePattern and globLiteralPrefix', () => {
  it('write a glob for SQL LIKE with `\\` as escape: `*` is `%`, and LIKE’s own wildcards stand for themselves', () => {
    expect(globToLikePattern('invoice.*')).toBe('invoice.%');
    expect(globToLikePattern('a_b%c\\d*e')).toBe('a\\_b\\%c\\\\d%e');
    expect(globToLikePattern('**')).toBe('%%');
    expect(globToLikePattern('exact')).toBe('exact');
  });

  it('give the text before the first `*`, the whole glob without one', () => {
    expect(globLiteralPrefix('invoice.*.paid')).toBe('invoice.');
    expect(globLiteralPrefix('*.created')).toBe('');
    expect(globLiteralPrefix('customer.created')).toBe('customer.created');
  });

  it('prefixesOf cuts between code points, from the empty prefix to the whole value', () => {
    expect(prefixesOf('ab')).toEqual(['', 'a', 'ab']);
    expect(prefixesOf('a🚀')).toEqual(['', 'a', 'a🚀']);
    expect(prefixesOf('')).toEqual(['']);
  });
});
