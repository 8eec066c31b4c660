import { describe, expect, it } from 'vitest';
import { applySampleEdits, parseSampleEdit, sampleEditPathProblem } from '../src/samples.js';

describe('applySampleEdits', () => {
  it('refuses a step through a number, a string or a boolean inside an array, naming the path', () => {
    // Never dropped silently: a field written onto the array itself would vanish from the JSON.
    expect(() => applySampleEdits({ list: [1] }, [{ path: 'list.0.x', value: 1 }])).toThrow('"list.0.x": list.0 is a number, not an object');
    expect(() => applySampleEdits({ a: { list: ['s'] } }, [{ path: 'a.list.0.x', value: 1 }])).toThrow('"a.list.0.x": a.list.0 is a string, not an object');
    expect(() => applySampleEdits({ list: [true] }, [{ path: 'list.0.x.y', value: 1 }])).toThrow('"list.0.x.y": list.0 is a boolean, not an object');
  });

  it('indexes arrays by plain decimal digits only, and appends only at the end', () => {
    expect(applySampleEdits({ list: [] }, [{ path: 'list.0', value: 'first' }])).toEqual({ list: ['first'] });
    expect(applySampleEdits({ list: ['a'] }, [{ path: 'list.1', value: 'b' }])).toEqual({ list: ['a', 'b'] });
    expect(applySampleEdits({ list: Array<number>(11).fill(0) }, [{ path: 'list.10', value: 1 }]).list).toEqual([...Array<number>(10).fill(0), 1]);
    expect(() => applySampleEdits({ list: [] }, [{ path: 'list.1', value: 1 }])).toThrow('"list.1": list has no item 1');
    expect(() => applySampleEdits({ a: { list: [{}] } }, [{ path: 'a.list.1.x', value: 1 }])).toThrow('"a.list.1.x": a.list has no item 1');
    // Number() would read these as 0; an edit must not.
    for (const key of ['0x0', ' 0', '0e0', '-0', '']) {
      const path = `list.${key}`;
      if (key === '') {
        expect(() => applySampleEdits({ list: ['a'] }, [{ path, value: 1 }])).toThrow('is not a path');
        continue;
      }
      expect(() => applySampleEdits({ list: ['a'] }, [{ path, value: 1 }]), path).toThrow(`"${path}": list has no item ${key}`);
    }
  });

  it('writes ordinary data properties, so the edited body can be edited again or changed by its caller', () => {
    const body = applySampleEdits({ a: 1 }, [
      { path: 'a', value: 2 },
      { path: 'b.c', value: 3 },
      { path: 'a', value: 4 },
      { path: 'b.c', value: 5 },
    ]);
    expect(body).toEqual({ a: 4, b: { c: 5 } });
    const field = { value: 4, writable: true, enumerable: true, configurable: true };
    expect(Object.getOwnPropertyDescriptor(body, 'a')).toEqual(field);
    expect(Object.getOwnPropertyDescriptor(body, 'b')).toEqual({ ...field, value: { c: 5 } });
    body.a = 6;
    delete body.b;
    expect(body).toEqual({ a: 6 });
  });
});

describe('sampleEditPathProblem and parseSampleEdit', () => {
  it('say what is wrong with a path', () => {
    expect(sampleEditPathProblem('data.object.amount')).toBeNull();
    expect(sampleEditPathProblem('a..b')).toBe('"a..b" is not a path: use dotted keys such as data.object.amount');
    expect(sampleEditPathProblem('a.__proto__.b')).toBe('"a.__proto__.b" names "__proto__", which is refused: a path may not use __proto__, constructor or prototype');
    expect(() => parseSampleEdit('a..b=1')).toThrow('"a..b" is not a path');
    expect(() => parseSampleEdit('=1')).toThrow('"=1" is not PATH=VALUE (such as data.object.amount=5000)');
  });

  it('keeps a value that is JSON but not a scalar as text, and an empty value as ""', () => {
    expect(parseSampleEdit('a=[1]')).toEqual({ path: 'a', value: '[1]' });
    expect(parseSampleEdit('a=')).toEqual({ path: 'a', value: '' });
    expect(parseSampleEdit('a="x=y"')).toEqual({ path: 'a', value: 'x=y' });
    expect(parseSampleEdit('a=-1.5')).toEqual({ path: 'a', value: -1.5 });
    expect(parseSampleEdit('a=false')).toEqual({ path: 'a', value: false });
  });
});
