import { describe, expect, it } from 'vitest';
import { closest, editDistance, suggestCommand, suggestFlags } from '../src/suggest.js';

const IDS = ['listen', 'login', 'logs', 'endpoints:create', 'endpoints:list', 'endpoints:get', 'messages:wait', 'inbound:messages:get', 'inbound:messages:wait', 'dev'];

describe('editDistance', () => {
  it('counts insertions, deletions, substitutions and a swapped pair as one edit each', () => {
    expect(editDistance('listen', 'listen')).toBe(0);
    expect(editDistance('lisen', 'listen')).toBe(1);
    expect(editDistance('listten', 'listen')).toBe(1);
    expect(editDistance('lesten', 'listen')).toBe(1);
    expect(editDistance('wiat', 'wait')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });
});

describe('closest', () => {
  it('finds a typo, and nothing for another word or a too-short one', () => {
    expect(closest('tiemout', ['timeout', 'for', 'json'])).toBe('timeout');
    expect(closest('jsno', ['timeout', 'for', 'json'])).toBe('json');
    expect(closest('banana', ['timeout', 'for', 'json'])).toBeUndefined();
    expect(closest('x', ['for', 'json'])).toBeUndefined();
  });
});

describe('suggestCommand', () => {
  it('keeps the words typed after the command', () => {
    expect(suggestCommand('mesages:wait:0190', IDS)).toBe('messages:wait:0190');
    expect(suggestCommand('inbound:mesages:get:x', IDS)).toBe('inbound:messages:get:x');
    expect(suggestCommand('endpoint:list', IDS)).toBe('endpoints:list');
    expect(suggestCommand('lisen:x', IDS)).toBe('listen:x');
  });

  it('suggests nothing when nothing is close', () => {
    expect(suggestCommand('endpoints:frobnicate', IDS)).toBeUndefined();
    expect(suggestCommand('xyz', IDS)).toBeUndefined();
  });
});

describe('suggestFlags', () => {
  it("rewrites oclif's refusal with the meant flag of each", () => {
    expect(suggestFlags(['--tiemout'], ['timeout', 'for'])).toBe('Nonexistent flag: --tiemout (did you mean --timeout?)');
    expect(suggestFlags(['-z', '--tiemout=3s', '--zzz'], ['timeout', 'for'])).toBe('Nonexistent flags: -z, --tiemout=3s (did you mean --timeout?), --zzz');
  });
});
