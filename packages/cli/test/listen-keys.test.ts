import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { dispatchKeys, listenForKeys, type KeyActions } from '../src/listen/keys.js';

function recorder(): { actions: KeyActions; seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    actions: { pause: () => seen.push('pause'), replay: () => seen.push('replay'), quit: () => seen.push('quit'), interrupt: () => seen.push('interrupt') },
  };
}

describe('listen keys', () => {
  it('p, r, q (either case) and Ctrl-C; everything else is ignored', () => {
    const { actions, seen } = recorder();
    dispatchKeys('pPrRxq\u0003\r\n', actions);
    expect(seen).toEqual(['pause', 'pause', 'replay', 'replay', 'quit', 'interrupt']);
  });

  it('reads a terminal in raw mode and gives it back', () => {
    const input = Object.assign(new PassThrough(), { isTTY: true, raw: [] as boolean[], setRawMode(mode: boolean) { this.raw.push(mode); return this; } });
    const { actions, seen } = recorder();
    const release = listenForKeys(input as unknown as NodeJS.ReadStream, actions);
    input.write('p');
    release();
    input.write('q');
    expect(seen).toEqual(['pause']);
    expect(input.raw).toEqual([true, false]);
  });

  it('never reads input that is not a terminal (a pipe is the user\'s data)', () => {
    const input = new PassThrough();
    const { actions, seen } = recorder();
    const release = listenForKeys(input as unknown as NodeJS.ReadStream, actions);
    input.write('q');
    release();
    expect(seen).toEqual([]);
  });
});
