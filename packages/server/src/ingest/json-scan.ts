/**
 * Reads the values at a few paths of a JSON document as its bytes stream by, without building the
 * document: how the event type of a body that streams to storage is found (ingest/event-type.ts).
 * One pass, a little state per nesting level, nothing kept but the values asked for.
 *
 * The structure is checked (brackets, commas, colons, strings, one top-level value); literals are
 * checked only where a value is read. A document found malformed yields nothing.
 */

/** A value found at a path: a string (decoded), a number or boolean (its JSON text), or another kind. */
export type ScannedValue = { kind: 'string'; value: string } | { kind: 'literal'; text: string } | { kind: 'other' };

/** Longest string or literal read at a path, in bytes: an event type is at most 255 characters. */
const MAX_CAPTURE_BYTES = 4096;
/** Longest key compared with a path's segment; longer keys match no path. */
const MAX_KEY_BYTES = 1024;
/** Deeper documents are read no further (still checked, as the byte count of open brackets). */
const MAX_TRACKED_DEPTH = 64;

const enum State {
  Value,
  AfterValue,
  KeyOrEnd,
  Key,
  Colon,
  Str,
  Literal,
  Done,
}

interface Frame {
  array: boolean;
  /** The paths still matching down to this container. */
  candidates: number[];
  /** An array's index of the current element; an object's current key (null past MAX_KEY_BYTES). */
  index: number;
  key: string | null;
}

const NOWHERE: { at: number; candidates: number[] } = Object.freeze({ at: -1, candidates: Object.freeze([]) as unknown as number[] });

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
const LITERAL = /^(?:-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)$/;

export class JsonPathScanner {
  private state = State.Value;
  private readonly stack: Frame[] = [];
  private readonly found = new Map<number, ScannedValue>();
  private failed = false;
  private sawValue = false;
  private atStart = true;
  private bomSkip = 0;
  /** The string being read: a key, a value at a path, or neither. */
  private strRole: 'key' | 'capture' | 'skip' = 'skip';
  /** The string being read is an object's key (read or skipped), so a colon follows it. */
  private strIsKey = false;
  private escaped = false;
  private capture: number[] = [];
  private captureOver = false;
  /** The path a value being read belongs to (or -1), and whether it is the top level. */
  private capturing = -1;
  private literal: number[] = [];
  /** Brackets open past MAX_TRACKED_DEPTH. */
  private untracked: number[] = [];

  constructor(private readonly paths: readonly (readonly string[])[]) {}

  write(chunk: Uint8Array): void {
    const n = chunk.length;
    for (let i = 0; i < n && !this.failed; i++) {
      // The bulk of a body is the inside of strings no path asks for: passed over in a tight loop.
      if (this.state === State.Str && this.strRole === 'skip' && !this.escaped) {
        let c = chunk[i]!;
        while (c !== 0x22 && c !== 0x5c && c >= 0x20 && ++i < n) c = chunk[i]!;
        if (i === n) return;
      }
      this.step(chunk[i]!);
    }
  }

  /** The values found, by index of their path; empty when the document was not well-formed JSON. */
  end(): Map<number, ScannedValue> {
    if (this.state === State.Literal) this.finishLiteral();
    if (this.failed || !this.sawValue || this.stack.length > 0 || this.untracked.length > 0 || (this.state !== State.Done && this.state !== State.AfterValue)) return new Map();
    return this.found;
  }

  /** Whether the top-level value is an object (known once its first byte went by). */
  topLevelObject: boolean | null = null;

  private fail(): void {
    this.failed = true;
  }

  private step(c: number): void {
    if (this.atStart) {
      // A UTF-8 byte order mark is skipped, as JSON.parse of the decoded text would after slicing it.
      const bom = [0xef, 0xbb, 0xbf];
      if (c === bom[this.bomSkip]) {
        this.bomSkip++;
        if (this.bomSkip === 3) this.atStart = false;
        return;
      }
      if (this.bomSkip > 0) return this.fail();
      this.atStart = false;
    }
    switch (this.state) {
      case State.Str:
        return this.inString(c);
      case State.Literal:
        if ((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x2b || c === 0x2d || c === 0x2e) {
          if (this.capturing >= 0 && this.literal.length < MAX_CAPTURE_BYTES) this.literal.push(c);
          return;
        }
        this.finishLiteral();
        if (this.failed) return;
        return this.step(c);
      case State.Value:
        if (isSpace(c)) return;
        return this.startValue(c);
      case State.AfterValue:
        if (isSpace(c)) return;
        return this.afterValue(c);
      case State.KeyOrEnd:
        if (isSpace(c)) return;
        if (c === 0x7d) return this.close(false);
        if (c !== 0x22) return this.fail();
        return this.startString(this.keyRole(), true);
      case State.Key:
        if (isSpace(c)) return;
        if (c !== 0x22) return this.fail();
        return this.startString(this.keyRole(), true);
      case State.Colon:
        if (isSpace(c)) return;
        if (c !== 0x3a) return this.fail();
        this.state = State.Value;
        return;
      case State.Done:
        if (!isSpace(c)) this.fail();
        return;
    }
  }

  /** A key is read only where a path may continue through it. */
  private keyRole(): 'key' | 'skip' {
    const frame = this.stack[this.stack.length - 1];
    return this.untracked.length === 0 && frame !== undefined && frame.candidates.length > 0 ? 'key' : 'skip';
  }

  /** Which path (if any) the value starting now sits at; the candidates of its children otherwise. */
  private locate(): { at: number; candidates: number[] } {
    const depth = this.stack.length;
    const parent = this.stack[depth - 1];
    if (parent === undefined) return { at: -1, candidates: this.paths.map((_, i) => i) };
    // Inside anything no path leads into, the common case: nothing to compare, nothing to allocate.
    if (parent.candidates.length === 0) return NOWHERE;
    const inherited = parent.candidates;
    const segment = parent.array ? String(parent.index) : parent.key;
    const candidates: number[] = [];
    let at = -1;
    for (const p of inherited) {
      const path = this.paths[p]!;
      if (segment === null || path[depth - 1] !== segment) continue;
      // Arrays are indexed by digits only (`items.0`), as walk() in event-type.ts does.
      if (parent.array && !/^\d+$/.test(path[depth - 1]!)) continue;
      if (path.length === depth) at = p;
      else candidates.push(p);
    }
    return { at, candidates };
  }

  private startValue(c: number): void {
    if (this.stack.length === 0) {
      if (this.sawValue) return this.fail();
      this.sawValue = true;
      this.topLevelObject = c === 0x7b;
    }
    const { at, candidates } = this.untracked.length > 0 ? NOWHERE : this.locate();
    if (c === 0x7b || c === 0x5b) {
      if (at >= 0) this.found.set(at, { kind: 'other' });
      const array = c === 0x5b;
      if (this.untracked.length > 0 || this.stack.length >= MAX_TRACKED_DEPTH) {
        this.untracked.push(c);
      } else {
        this.stack.push({ array, candidates, index: 0, key: null });
      }
      this.state = array ? State.Value : State.KeyOrEnd;
      this.arrayOpened = array;
      return;
    }
    if (c === 0x5d) {
      // `[]`: an array closed before its first value.
      if (this.arrayOpened) return this.close(true);
      return this.fail();
    }
    this.arrayOpened = false;
    if (c === 0x22) {
      this.capturing = at;
      return this.startString(at >= 0 ? 'capture' : 'skip');
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39) || c === 0x74 || c === 0x66 || c === 0x6e) {
      this.capturing = at;
      if (at >= 0) this.literal = [c];
      this.state = State.Literal;
      return;
    }
    this.fail();
  }

  /** Set right after `[`, so that `[]` closes instead of failing as a value that is `]`. */
  private arrayOpened = false;

  private finishLiteral(): void {
    if (this.capturing >= 0) {
      const text = String.fromCharCode(...this.literal);
      if (!LITERAL.test(text)) return this.fail();
      this.found.set(this.capturing, text === 'null' ? { kind: 'other' } : { kind: 'literal', text });
      this.literal = [];
    }
    this.capturing = -1;
    this.valueDone();
  }

  private startString(role: 'key' | 'capture' | 'skip', isKey = role === 'key'): void {
    this.arrayOpened = false;
    this.strRole = role;
    this.strIsKey = isKey;
    this.escaped = false;
    if (role !== 'skip') this.capture = [];
    this.captureOver = false;
    this.state = State.Str;
  }

  private inString(c: number): void {
    if (this.escaped) {
      this.escaped = false;
    } else if (c === 0x5c) {
      this.escaped = true;
    } else if (c === 0x22) {
      return this.endString();
    } else if (c < 0x20) {
      return this.fail();
    }
    if (this.strRole === 'skip') return;
    const cap = this.strRole === 'key' ? MAX_KEY_BYTES : MAX_CAPTURE_BYTES;
    if (this.capture.length < cap) this.capture.push(c);
    else this.captureOver = true;
  }

  private decoded(): string | null {
    if (this.captureOver) return null;
    try {
      return JSON.parse(`"${Buffer.from(this.capture).toString('utf8')}"`) as string;
    } catch {
      return null;
    }
  }

  private endString(): void {
    if (this.strIsKey) {
      const frame = this.stack[this.stack.length - 1];
      if (frame && this.strRole === 'key') frame.key = this.decoded();
      this.state = State.Colon;
      return;
    }
    if (this.strRole === 'capture' && this.capturing >= 0) {
      const value = this.decoded();
      // Too long to be an event type: found, but as nothing usable.
      this.found.set(this.capturing, value === null ? { kind: 'other' } : { kind: 'string', value });
    }
    this.capturing = -1;
    this.valueDone();
  }

  private valueDone(): void {
    this.state = this.stack.length === 0 && this.untracked.length === 0 ? State.Done : State.AfterValue;
  }

  private afterValue(c: number): void {
    const inArray = this.untracked.length > 0 ? this.untracked[this.untracked.length - 1] === 0x5b : this.stack[this.stack.length - 1]?.array;
    if (c === 0x2c) {
      if (this.untracked.length === 0) {
        const frame = this.stack[this.stack.length - 1]!;
        if (frame.array) frame.index++;
        else frame.key = null;
      }
      this.state = inArray ? State.Value : State.Key;
      return;
    }
    if (c === 0x5d && inArray) return this.close(true);
    if (c === 0x7d && inArray === false) return this.close(false);
    this.fail();
  }

  private close(array: boolean): void {
    this.arrayOpened = false;
    if (this.untracked.length > 0) {
      if (this.untracked.pop() !== (array ? 0x5b : 0x7b)) return this.fail();
    } else {
      const frame = this.stack.pop();
      if (frame === undefined || frame.array !== array) return this.fail();
    }
    this.valueDone();
  }
}
