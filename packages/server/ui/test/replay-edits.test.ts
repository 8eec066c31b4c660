import { describe, expect, it } from 'vitest';
import { headerEdits, replayEdits } from '../src/replay-edits.js';
import { replayFilter } from '../src/views/bulk-replay.js';

const original: [string, string][] = [
  ['Content-Type', 'application/json'],
  ['X-Multi', 'first'],
  ['X-Multi', 'second'],
  ['X-Hub-Signature-256', 'sha256=abc'],
];
const rows = () => original.map(([name, value]) => ({ name, value }));

describe('headerEdits', () => {
  it('edits nothing for the table as it came, nor for a name spelt in another case', () => {
    expect(headerEdits(original, rows())).toEqual({ edits: new Map(), problem: null });
    const respelt = rows();
    respelt[0] = { name: 'content-type', value: 'application/json' };
    expect(headerEdits(original, respelt).edits.size).toBe(0);
  });

  it('sets a changed or added line, removes a name no longer there, and ignores blank rows', () => {
    const edited = rows().filter((row) => row.name !== 'X-Hub-Signature-256');
    edited[0] = { name: 'Content-Type', value: 'application/json; charset=utf-8' };
    edited.push({ name: 'X-Added', value: 'yes' }, { name: ' ', value: '' });
    expect(headerEdits(original, edited)).toEqual({
      edits: new Map<string, string | null>([
        ['Content-Type', 'application/json; charset=utf-8'],
        ['X-Added', 'yes'],
        ['X-Hub-Signature-256', null],
      ]),
      problem: null,
    });
  });

  it('takes one new value for a repeated name, and refuses two changed lines of one name or a line without a name', () => {
    const one = rows().filter((row) => row.value !== 'second');
    expect(headerEdits(original, one).edits).toEqual(new Map([['X-Multi', 'first']]));
    const two = rows();
    two[2] = { name: 'X-Multi', value: 'changed' };
    expect(headerEdits(original, two).problem).toBe('X-Multi: one value per header name (a replay replaces every line of a name with one)');
    expect(headerEdits(original, [...rows(), { name: '', value: 'orphan' }]).problem).toBe('the header line with the value “orphan” needs a name');
  });
});

describe('replayEdits', () => {
  const base = { originalHeaders: original, rows: rows(), initialBody: '{\n  "a": 1\n}', body: '{\n  "a": 1\n}', json: true, resign: true };

  it('is no edit while nothing changed, resign or not', () => {
    expect(replayEdits(base)).toEqual({ edits: null, problem: null });
  });

  it('sends the edited body as typed, with the header edits and resign', () => {
    const added = [...rows(), { name: '__proto__', value: 'x' }];
    const outcome = replayEdits({ ...base, body: '{"a": 2}', rows: added });
    expect(outcome.problem).toBeNull();
    expect(JSON.stringify(outcome.edits)).toBe('{"body":"{\\"a\\": 2}","headers":{"__proto__":"x"},"resign":true}');
    expect(Object.getPrototypeOf(outcome.edits!.headers)).toBe(Object.prototype);
  });

  it('refuses a JSON body that does not parse, and takes any text for a text body', () => {
    expect(replayEdits({ ...base, body: '{"a": ' }).problem).toMatch(/^the body is not JSON: /u);
    expect(replayEdits({ ...base, json: false, initialBody: 'plain', body: '{"a": ', resign: false }).edits).toEqual({ body: '{"a": ' });
  });

  it('never sends a body it could not show', () => {
    expect(replayEdits({ ...base, initialBody: null, body: 'ignored' }).edits).toBeNull();
  });
});

describe('replayFilter', () => {
  const none = { q: '', event_type: '', answer: '', received_after: '', received_before: '' };

  it('takes the window and an exact event type', () => {
    const chosen = replayFilter({ ...none, received_after: '2026-12-04T10:00:00', event_type: 'push' });
    expect(chosen).toEqual({ filter: { received_after: new Date('2026-12-04T10:00:00').toISOString(), event_type: 'push' } });
  });

  it('says why there is no job for the filters a job cannot take', () => {
    const from = { ...none, received_after: '2026-12-04T10:00:00' };
    expect(replayFilter(none)).toHaveProperty('reason', expect.stringMatching(/^Set From/u));
    expect(replayFilter({ ...from, q: 'cus_1' })).toHaveProperty('reason', expect.stringMatching(/search text/u));
    expect(replayFilter({ ...from, answer: '5xx' })).toHaveProperty('reason', expect.stringMatching(/answer/u));
    expect(replayFilter({ ...from, event_type: 'invoice.*' })).toHaveProperty('reason', expect.stringMatching(/pattern/u));
  });
});
