import { readdirSync, readFileSync } from 'node:fs';
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

/** Each server module (path under src, `/`-separated) with the modules of src it imports. */
function serverImports(): Map<string, string[]> {
  const imports = new Map<string, string[]>();
  for (const file of sourceFiles(serverSrc)) {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(/\bfrom\s+'(\.{1,2}\/[^']+)'|\bimport\(\s*'(\.{1,2}\/[^']+)'\s*\)/g)].map((match) =>
      path.relative(serverSrc, path.resolve(path.dirname(file), match[1] ?? match[2]!)).split(path.sep).join('/').replace(/\.js$/, '.ts'),
    );
    imports.set(path.relative(serverSrc, file).split(path.sep).join('/'), targets);
  }
  return imports;
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
const ENGINES = ['IngestBatcher', 'PullIngestBatcher', 'StreamHub', 'WatchHub', 'ResultBatcher', 'MessageBatcher', 'DeliveryWorker', 'SocketRegistry'];

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
        targets.filter((t) => ROUTE_FILES.test(t) || /^(plugins|http|ingest|stream|delivery)\//.test(t) || ROOT.has(t)).map((t) => `${file} → ${t}`),
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
    expect(definitions.get('LISTEN_PAGE_SIZE')).toEqual([path.join('shared', 'src', 'schemas', 'inbound.ts')]);
  });
});
