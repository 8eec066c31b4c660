import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The shape of the CLI's source that the compiler cannot hold: no two modules import each other,
 * even through others and even for types only, and imports run down through these layers, top first:
 *
 * - commands: the oclif commands (`commands/`), the hook (`hooks/`), the package's entry (`index.ts`)
 *   and the command base classes (`base-command.ts`, `list-command.ts`, `rejections-command.ts`);
 * - mcp: the MCP server of `hookrelay mcp`, its tools and their answers (`mcp/`);
 * - dev: `hookrelay dev`'s session, embedded server, tunnel and state (`dev/`);
 * - flags: the flag definitions and their parsing into settings (`flags/`);
 * - helpers: the other modules at the top of src (paging, prompts, waits, batches, the inspector URL …);
 * - listen: the listen engine (`listen/`);
 * - format: the formatters of what people read (`format/`);
 * - core: configuration, errors, exit codes and the stop signals (`config.ts`, `errors.ts`,
 *   `exit-codes.ts`, `signals.ts`).
 *
 * A module may import its own layer and the layers below it, never one above, types included.
 */

const srcDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src');

interface Import {
  /** The imported module, as a path under src (`listen/ports.ts`). */
  target: string;
  /** An `import type` / `export type` statement: nothing of it is left at run time. */
  typeOnly: boolean;
}

type ImportMap = ReadonlyMap<string, readonly Import[]>;

/** The relative imports of a module's text (static, `export … from`, side-effect and dynamic), as paths under src. */
function importsOf(file: string, text: string): Import[] {
  const found: Import[] = [];
  const add = (specifier: string, typeOnly: boolean): void => {
    if (!specifier.startsWith('./') && !specifier.startsWith('../')) return;
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)).replace(/\.js$/u, '.ts');
    found.push({ target, typeOnly });
  };
  for (const match of text.matchAll(/(?:^|[\n;])\s*(?:import|export)\s+(type\s+)?[^;'"]*?\bfrom\s+'([^']+)'/gu)) add(match[2]!, match[1] !== undefined);
  for (const match of text.matchAll(/(?:^|[\n;])\s*import\s+'([^']+)'/gu)) add(match[1]!, false);
  for (const match of text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/gu)) add(match[1]!, false);
  return found;
}

function sourceImports(): Map<string, Import[]> {
  const imports = new Map<string, Import[]>();
  for (const entry of readdirSync(srcDir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = path.relative(srcDir, path.join(entry.parentPath, entry.name)).split(path.sep).join('/');
    imports.set(file, importsOf(file, readFileSync(path.join(srcDir, file), 'utf8')));
  }
  return imports;
}

const COMMAND_BASES = new Set(['index.ts', 'base-command.ts', 'list-command.ts', 'rejections-command.ts']);
const CORE = new Set(['config.ts', 'errors.ts', 'exit-codes.ts', 'signals.ts']);
const atTop = (file: string): boolean => !file.includes('/');

/** Top first. */
const LAYERS: readonly { name: string; holds: (file: string) => boolean }[] = [
  { name: 'commands', holds: (file) => file.startsWith('commands/') || file.startsWith('hooks/') || COMMAND_BASES.has(file) },
  { name: 'mcp', holds: (file) => file.startsWith('mcp/') },
  { name: 'dev', holds: (file) => file.startsWith('dev/') },
  { name: 'flags', holds: (file) => file.startsWith('flags/') },
  { name: 'helpers', holds: (file) => atTop(file) && !COMMAND_BASES.has(file) && !CORE.has(file) },
  { name: 'listen', holds: (file) => file.startsWith('listen/') },
  { name: 'format', holds: (file) => file.startsWith('format/') },
  { name: 'core', holds: (file) => CORE.has(file) },
];

/** Each module's layers: exactly one, for a module the rules know. */
function layersOf(file: string): number[] {
  return LAYERS.flatMap((layer, index) => (layer.holds(file) ? [index] : []));
}

/** Every import that runs up a layer, types included; as `from → to`. */
function upwardImports(imports: ImportMap): string[] {
  const upward: string[] = [];
  for (const [file, targets] of imports) {
    const from = layersOf(file)[0];
    for (const { target } of targets) {
      const to = layersOf(target)[0];
      if (from === undefined || to === undefined) continue;
      if (to < from) upward.push(`${file} → ${target} (${LAYERS[from]!.name} → ${LAYERS[to]!.name})`);
    }
  }
  return upward;
}

/** Each import circle as a path that ends where it began; one per group of modules that reach each other. */
function importCircles(imports: ImportMap): string[] {
  const edges = (file: string): string[] => [...new Set((imports.get(file) ?? []).map((i) => i.target))].filter((t) => imports.has(t));
  // Tarjan's strongly connected components.
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, counter);
    low.set(file, counter);
    counter += 1;
    stack.push(file);
    onStack.add(file);
    for (const next of edges(file)) {
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file)!, index.get(next)!));
      }
    }
    if (low.get(file) === index.get(file)) {
      const group: string[] = [];
      for (let member = stack.pop()!; ; member = stack.pop()!) {
        onStack.delete(member);
        group.push(member);
        if (member === file) break;
      }
      if (group.length > 1 || edges(file).includes(file)) groups.push(group.sort());
    }
  };
  for (const file of [...imports.keys()].sort()) if (!index.has(file)) visit(file);
  // A shortest way round from the group's first module, for the message.
  return groups.map((group) => {
    const members = new Set(group);
    const start = group[0]!;
    const cameFrom = new Map<string, string>();
    const queue = [start];
    while (queue.length > 0) {
      const file = queue.shift()!;
      for (const next of edges(file).filter((t) => members.has(t))) {
        if (next === start) {
          const way = [start];
          for (let at = file; at !== start; at = cameFrom.get(at)!) way.splice(1, 0, at);
          return [...way, start].join(' → ');
        }
        if (!cameFrom.has(next)) {
          cameFrom.set(next, file);
          queue.push(next);
        }
      }
    }
    return group.join(', ');
  });
}

describe('CLI module layering', () => {
  const imports = sourceImports();

  it('sees the source: every module of src, each import of one resolving to a module', () => {
    expect(imports.size).toBeGreaterThan(100);
    const unresolved = [...imports].flatMap(([file, targets]) => targets.filter((t) => !imports.has(t.target)).map((t) => `${file} → ${t.target}`));
    expect(unresolved).toEqual([]);
  });

  it('puts every module in exactly one layer', () => {
    const misplaced = [...imports.keys()].filter((file) => layersOf(file).length !== 1).map((file) => `${file}: ${layersOf(file).length} layers`);
    expect(misplaced).toEqual([]);
  });

  it('has no import circle between files', () => {
    expect(importCircles(imports)).toEqual([]);
  });

  it('imports only down the layers', () => {
    expect(upwardImports(imports)).toEqual([]);
  });

});

describe('the fence itself', () => {
  it('reads static, type-only, re-exported, side-effect and dynamic imports', () => {
    const text = [
      "import { a } from './a.js';",
      "import type { B } from '../listen/b.js';",
      'import {',
      '  c,',
      '  type C,',
      "} from './c.js';",
      "export { d } from './d.js';",
      "export type { E } from './e.js';",
      "import './side.js';",
      "const f = await import('./f.js');",
      "import { Flags } from '@oclif/core';",
    ].join('\n');
    expect(importsOf('format/x.ts', text)).toEqual([
      { target: 'format/a.ts', typeOnly: false },
      { target: 'listen/b.ts', typeOnly: true },
      { target: 'format/c.ts', typeOnly: false },
      { target: 'format/d.ts', typeOnly: false },
      { target: 'format/e.ts', typeOnly: true },
      { target: 'format/side.ts', typeOnly: false },
      { target: 'format/f.ts', typeOnly: false },
    ]);
  });

  it('fails on the circle and the upward import the listener once had', () => {
    const value = (target: string): Import => ({ target, typeOnly: false });
    const type = (target: string): Import => ({ target, typeOnly: true });
    const before = new Map<string, Import[]>([
      ['listen/flags.ts', [type('listen/listener.ts')]],
      ['listen/listener.ts', [value('listen/forwarder.ts'), value('listen/stream.ts')]],
      ['listen/forwarder.ts', [type('listen/flags.ts')]],
      ['listen/stream.ts', [value('listen/forwarder.ts')]],
      ['format/listen.ts', [type('listen/listener.ts')]],
      ['wait.ts', [value('listen/duration.ts')]],
      ['listen/duration.ts', []],
    ]);
    expect(importCircles(before)).toEqual(['listen/flags.ts → listen/listener.ts → listen/forwarder.ts → listen/flags.ts']);
    expect(upwardImports(before)).toEqual(['format/listen.ts → listen/listener.ts (format → listen)']);
    // A type runs up as a value does: the formatters take nothing of the listener.
    before.set('format/listen.ts', [type('listen/ports.ts')]);
    expect(upwardImports(before)).toEqual(['format/listen.ts → listen/ports.ts (format → listen)']);
  });

  it('fails on a module that imports itself and on a lower layer importing a higher one', () => {
    const imports = new Map<string, Import[]>([
      ['paging.ts', [{ target: 'paging.ts', typeOnly: true }]],
      ['listen/output.ts', [{ target: 'flags/forwarding.ts', typeOnly: true }]],
      ['flags/forwarding.ts', []],
      ['errors.ts', [{ target: 'format/text.ts', typeOnly: false }]],
      ['format/text.ts', []],
    ]);
    expect(importCircles(imports)).toEqual(['paging.ts → paging.ts']);
    expect(upwardImports(imports)).toEqual(['listen/output.ts → flags/forwarding.ts (listen → flags)', 'errors.ts → format/text.ts (core → format)']);
  });
});
