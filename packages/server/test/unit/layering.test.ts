import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Rules of the source's shape that the compiler cannot hold: which module may import which, and
 * where the stream protocol's frames and constants come from.
 */

const packagesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const serverSrc = path.join(packagesDir, 'server/src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/**
 * Each module of a package's src (path under src, `/`-separated) with the modules of src it imports:
 * static imports and re-exports, type-only ones included, side-effect imports and `import()`.
 */
function moduleImports(src: string): Map<string, string[]> {
  const imports = new Map<string, string[]>();
  for (const file of sourceFiles(src)) {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(/\bfrom\s+'(\.{1,2}\/[^']+)'|\bimport\(\s*'(\.{1,2}\/[^']+)'\s*\)|^import\s+'(\.{1,2}\/[^']+)'/gm)].map((match) =>
      path.relative(src, path.resolve(path.dirname(file), match[1] ?? match[2] ?? match[3]!)).split(path.sep).join('/').replace(/\.js$/, '.ts'),
    );
    imports.set(path.relative(src, file).split(path.sep).join('/'), [...new Set(targets)]);
  }
  return imports;
}

const serverImports = () => moduleImports(serverSrc);

/**
 * The same imports between the folders of src (a file at the top of src stands for itself): a
 * circle here is an import that runs back up, from a folder another one below it already imports.
 */
function folderImports(imports: ReadonlyMap<string, readonly string[]>): Map<string, string[]> {
  const folderOf = (file: string): string => (file.includes('/') ? `${file.slice(0, file.indexOf('/'))}/` : file);
  const folders = new Map<string, Set<string>>();
  for (const [file, targets] of imports) {
    const from = folderOf(file);
    const into = folders.get(from) ?? new Set<string>();
    for (const target of targets) if (imports.has(target) && folderOf(target) !== from) into.add(folderOf(target));
    folders.set(from, into);
  }
  return new Map([...folders].map(([folder, targets]) => [folder, [...targets]]));
}

/**
 * Every circle of imports between files, each once: `a.ts → b.ts → a.ts`. A circle makes the order in
 * which its modules run depend on which one is imported first, and ties files that should change
 * apart.
 */
function importCircles(imports: ReadonlyMap<string, readonly string[]>): string[] {
  // Tarjan's strongly connected components; a component of more than one file, or a file that
  // imports itself, holds a circle, shown as the shortest one through its first file.
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, counter);
    low.set(file, counter);
    counter++;
    stack.push(file);
    onStack.add(file);
    for (const target of imports.get(file) ?? []) {
      if (!imports.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || (imports.get(file) ?? []).includes(file)) components.push(component.sort());
  };
  for (const file of [...imports.keys()].sort()) if (!index.has(file)) visit(file);
  return components.map((component) => {
    const inside = new Set(component);
    const start = component[0]!;
    // Breadth-first from the first file back to itself, within the component.
    const previous = new Map<string, string>();
    const queue = [start];
    while (queue.length > 0) {
      const file = queue.shift()!;
      const targets = (imports.get(file) ?? []).filter((t) => inside.has(t)).sort();
      if (targets.includes(start)) {
        const circle = [start];
        for (let at = file; at !== start; at = previous.get(at)!) circle.splice(1, 0, at);
        return [...circle, start].join(' → ');
      }
      for (const target of targets) {
        if (!previous.has(target) && target !== start) {
          previous.set(target, file);
          queue.push(target);
        }
      }
    }
    return component.join(' → ');
  });
}

const ROUTE_FILES = /^(routes\/|ingest\/(routes|pull-routes)\.ts$)/;
/**
 * The route plugin a route file belongs to: the folder of a plugin split into files
 * (`routes/inbound-endpoints/`), else the file itself.
 */
function routePlugin(file: string): string {
  const folder = /^routes\/[^/]+\//.exec(file);
  return folder ? folder[0] : file;
}
/** The composition root and the process. */
const ROOT = new Set(['app.ts', 'engines.ts', 'main.ts']);
const ENGINES = ['IngestBatcher', 'PullIngestBatcher', 'StreamHub', 'WatchHub', 'ResultBatcher', 'MessageBatcher', 'DeliveryWorker', 'BulkJobWorker', 'SocketRegistry'];

describe('module layering', () => {
  const imports = serverImports();

  it('a stream module imports no route file, plugin or the composition root', () => {
    const upward = [...imports]
      .filter(([file]) => file.startsWith('stream/'))
      .flatMap(([file, targets]) => targets.filter((t) => ROUTE_FILES.test(t) || t.startsWith('plugins/') || ROOT.has(t)).map((t) => `${file} → ${t}`));
    expect(upward).toEqual([]);
  });

  it('a route file imports no route file outside its own folder: no route plugin imports another', () => {
    const across = [...imports]
      .filter(([file]) => ROUTE_FILES.test(file))
      .flatMap(([file, targets]) => targets.filter((t) => ROUTE_FILES.test(t) && routePlugin(t) !== routePlugin(file)).map((t) => `${file} → ${t}`));
    expect(across).toEqual([]);
  });

  it('what routes share (http/) imports no route file, plugin or the composition root', () => {
    const upward = [...imports]
      .filter(([file]) => file.startsWith('http/'))
      .flatMap(([file, targets]) => targets.filter((t) => ROUTE_FILES.test(t) || t.startsWith('plugins/') || ROOT.has(t)).map((t) => `${file} → ${t}`));
    expect(upward).toEqual([]);
  });

  it('a view imports no route file, plugin, engine, route helper or the composition root', () => {
    const upward = [...imports]
      .filter(([file]) => file.startsWith('views/'))
      .flatMap(([file, targets]) =>
        targets.filter((t) => ROUTE_FILES.test(t) || /^(plugins|http|ingest|stream|delivery|bulk|events)\//.test(t) || ROOT.has(t)).map((t) => `${file} → ${t}`),
      );
    expect(upward).toEqual([]);
  });

  it('a route file never imports the composition root or the process', () => {
    const upward = [...imports]
      .filter(([file]) => ROUTE_FILES.test(file))
      .flatMap(([file, targets]) => targets.filter((t) => ROOT.has(t)).map((t) => `${file} → ${t}`));
    expect(upward).toEqual([]);
  });
});

describe('the records the API shows', () => {
  it('every exported to…Out mapper lives in views/', () => {
    const mappers = sourceFiles(serverSrc).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/^export (?:async )?function (to\w*Out)\b|^export const (to\w*Out)\b/gm)].map(
        (match) => `${path.relative(serverSrc, file).split(path.sep).join('/')}: ${match[1] ?? match[2]}`,
      ),
    );
    expect(mappers).toContain('views/rejection.ts: toRejectionOut');
    expect(mappers.filter((mapper) => !mapper.startsWith('views/'))).toEqual([]);
  });
});

describe('imports between files', () => {
  it('form no circle in the server', () => {
    expect(importCircles(serverImports())).toEqual([]);
  });

  it('form no circle in the shared package', () => {
    expect(importCircles(moduleImports(path.join(packagesDir, 'shared/src')))).toEqual([]);
  });

  it('form no circle between the folders of the server: each folder stands above all it imports', () => {
    expect(importCircles(folderImports(serverImports()))).toEqual([]);
  });

  it('are found in a circle of any length, through type-only imports, re-exports and import()', () => {
    const circles = importCircles(
      new Map([
        ['a.ts', ['b.ts']],
        ['b.ts', ['c.ts', 'd.ts']],
        ['c.ts', ['a.ts']],
        ['d.ts', []],
        ['self.ts', ['self.ts']],
        ['x/one.ts', ['x/two.ts', 'missing.ts']],
        ['x/two.ts', ['x/one.ts']],
      ]),
    );
    expect(circles).toEqual(['a.ts → b.ts → c.ts → a.ts', 'self.ts → self.ts', 'x/one.ts → x/two.ts → x/one.ts']);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-layering-'));
    try {
      mkdirSync(path.join(dir, 'store'));
      writeFileSync(path.join(dir, 'store/index.ts'), "export async function open() {\n  return (await import('./s3.js')).open();\n}\n");
      writeFileSync(path.join(dir, 'store/s3.ts'), "import type { Store } from './types.js';\nexport const open = (): Store => ({});\n");
      writeFileSync(path.join(dir, 'store/types.ts'), "export type { Store } from './index.js';\n");
      writeFileSync(path.join(dir, 'main.ts'), "import './store/index.js';\n");
      expect(importCircles(moduleImports(dir))).toEqual(['store/index.ts → store/s3.ts → store/types.ts → store/index.ts']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('imports between folders', () => {
  it('find the one that ran back up: the metrics importing the ingest budget the ingest counts with', () => {
    const imports = new Map([
      ['ingest/body-limit.ts', ['metrics/index.ts', 'ingest/body-budget.ts']],
      ['ingest/body-budget.ts', []],
      ['metrics/index.ts', ['ingest/body-budget.ts', 'errors.ts']],
      ['errors.ts', []],
    ]);
    expect(importCircles(folderImports(imports))).toEqual(['ingest/ → metrics/ → ingest/']);
    imports.set('metrics/index.ts', ['errors.ts']);
    expect(importCircles(folderImports(imports))).toEqual([]);
  });
});

describe('the foundation modules', () => {
  /** Below every engine: what they need of the process comes as arguments. */
  const FOUNDATION = /^(db|lib|security)\//;
  const ABOVE = /^(app|bootstrap|config|engines|launch|main|runtime|services)\.ts$|^(admin|bulk|delivery|events|http|ingest|metrics|plugins|routes|stream|sweepers|views)\//;

  it('db/, lib/ and security/ import neither the configuration, the process nor an engine', () => {
    const upward = [...serverImports()]
      .filter(([file]) => FOUNDATION.test(file))
      .flatMap(([file, targets]) => targets.filter((t) => ABOVE.test(t)).map((t) => `${file} → ${t}`));
    expect(upward).toEqual([]);
  });
});

describe('the metrics', () => {
  /** Every engine counts through the metrics, so the metrics know no engine: the labels they count are theirs. */
  const ENGINE_DIRS = /^(admin|bulk|delivery|http|ingest|plugins|routes|stream|sweepers|views)\//;

  it('metrics/ imports no engine, route or plugin', () => {
    const upward = [...serverImports()]
      .filter(([file]) => file.startsWith('metrics/'))
      .flatMap(([file, targets]) => targets.filter((t) => ENGINE_DIRS.test(t)).map((t) => `${file} → ${t}`));
    expect(upward).toEqual([]);
  });
});

describe('the composition root', () => {
  it('builds every engine: no other module constructs one', () => {
    const constructing = sourceFiles(serverSrc)
      .filter((file) => new RegExp(`new (${ENGINES.join('|')})\\(`).test(readFileSync(file, 'utf8')))
      .map((file) => path.relative(serverSrc, file));
    expect(constructing).toEqual(['engines.ts']);
  });

  it('hands engines to the routes: no module keeps a registry of them in module state', () => {
    const registries = sourceFiles(serverSrc)
      // An empty map at module level is a registry filled at run time (a constant set of names is not).
      .filter((file) => /^(?:export )?(?:const|let) \w+\s*=\s*new (?:WeakMap|Map)(?:<.*>)?\(\)/m.test(readFileSync(file, 'utf8')))
      .map((file) => path.relative(serverSrc, file));
    expect(registries).toEqual([]);
  });
});

describe('the stream protocol', () => {
  it('the server writes frames only as typed objects of the shared protocol, never by hand', () => {
    const byHand = sourceFiles(serverSrc).filter((file) => /JSON\.stringify\(\s*\{\s*type\b/.test(readFileSync(file, 'utf8')));
    expect(byHand.map((file) => path.relative(serverSrc, file))).toEqual([]);
  });

  it('each of its constants is defined once, in shared when both sides use it', () => {
    const definitions = new Map<string, string[]>();
    for (const pkg of ['shared', 'server', 'cli']) {
      for (const file of sourceFiles(path.join(packagesDir, pkg, 'src'))) {
        for (const match of readFileSync(file, 'utf8').matchAll(/\bconst\s+(FATAL_STATUSES|LISTEN_PAGE_SIZE|[A-Z_]*PAGE_SIZE)\b/g)) {
          const where = path.relative(packagesDir, file);
          definitions.set(match[1]!, [...(definitions.get(match[1]!) ?? []), where]);
        }
      }
    }
    const twice = [...definitions].filter(([, files]) => files.length > 1);
    expect(twice).toEqual([]);
    expect(definitions.get('LISTEN_PAGE_SIZE')).toEqual([path.join('shared', 'src', 'constants.ts')]);
  });
});
