import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CHANNELS } from '../../src/db/channels.js';

/**
 * docs/architecture.md against the code: it names every NOTIFY channel there is, and every file or
 * folder it names in backticks exists.
 */

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
const doc = readFileSync(path.join(repoRoot, 'docs/architecture.md'), 'utf8');

/**
 * Where the doc's paths start, as it writes them: from the repo root (`packages/server/schema.sql`),
 * from packages/ (`shared/src/errors.ts`), from a package (`test/unit/…`, `sql/`, `src/listen/`) or
 * from a package's src (`db/channels.ts`, `listen/ports.ts`, `schemas/ingest.ts`).
 */
const BASES = ['', 'packages', 'packages/server', 'packages/server/src', 'packages/shared', 'packages/shared/src', 'packages/cli', 'packages/cli/src'];
/** The trees a bare file name (`claim.ts`, beside the folder its row names) is looked for in. */
const TREES = ['packages/server/src', 'packages/shared/src', 'packages/cli/src', 'packages/server'];
const FILE = /\.(ts|tsx|mjs|js|json|sql|md)$/;

/**
 * The paths among the doc's backticked names: a file (by its extension) or a folder (a trailing
 * `/`), one word, with no placeholder in it (`<function>`, `NNN_*`, `{id}`, `...`) and not a URL path.
 */
function namedPaths(markdown: string): string[] {
  const names = [...markdown.matchAll(/`([^`\n]+)`/g)].map((match) => match[1]!);
  return [...new Set(names)].filter((name) => !/[\s<>*{}]|\.\.\.|NNN|^[/@]/.test(name) && (FILE.test(name) || (name.endsWith('/') && name.length > 1)));
}

function filesNamed(dir: string, base: string): boolean {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist') continue;
    if (entry.isDirectory() ? filesNamed(path.join(dir, entry.name), base) : entry.name === base) return true;
  }
  return false;
}

/** The named paths that exist nowhere the doc's paths start from. */
function missingPaths(paths: readonly string[], root: string): string[] {
  return paths.filter((name) => {
    const folder = name.endsWith('/');
    if (!name.includes('/')) return !TREES.some((tree) => existsSync(path.join(root, tree)) && filesNamed(path.join(root, tree), name));
    return !BASES.some((base) => {
      const full = path.join(root, base, name);
      return existsSync(full) && statSync(full).isDirectory() === folder;
    });
  });
}

describe('docs/architecture.md', () => {
  it('names every NOTIFY channel of db/channels.ts', () => {
    expect(CHANNELS.length).toBeGreaterThan(0);
    expect(CHANNELS.filter((channel) => !doc.includes(`\`${channel}\``))).toEqual([]);
  });

  it('names only files and folders that exist', () => {
    const paths = namedPaths(doc);
    expect(paths).toEqual(expect.arrayContaining(['db/channels.ts', 'routes/inspector.ts', 'shared/src/answer.ts', 'test/unit/layering.test.ts', 'routes/']));
    expect(missingPaths(paths, repoRoot)).toEqual([]);
  });

  it('the check reads paths, skips placeholders and finds the missing ones', () => {
    const paths = namedPaths(
      'the `db/` module, `db/channels.ts`, `claim.ts`, `GET /v1/x`, `/in/{token}`, `sql/<function>.sql`, `NNN_*.sql`, ' +
        '`POST .../result`, `dist/ui`, `db/gone.ts`, `vanished.ts`, `db/channels.ts/`, `routes/inspector.ts/` and `@hookrelay/shared`',
    );
    expect(paths).toEqual(['db/', 'db/channels.ts', 'claim.ts', 'db/gone.ts', 'vanished.ts', 'db/channels.ts/', 'routes/inspector.ts/']);
    expect(missingPaths(paths, repoRoot)).toEqual(['db/gone.ts', 'vanished.ts', 'db/channels.ts/', 'routes/inspector.ts/']);
  });
});
