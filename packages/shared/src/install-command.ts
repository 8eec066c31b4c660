import { existsSync } from 'node:fs';
import path from 'node:path';

/** A path as one shell word: quoted when it holds anything but the usual path characters. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/u.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * The npm command that installs `packages` where a program can load them: beside its package, at
 * `packageDir` (the server's optional peers, the CLI's MCP SDK).
 * A global install (`npm install -g`) puts the package under `<prefix>/lib/node_modules` (Windows:
 * `<prefix>/node_modules`), whose parent is no project: the command is `npm install -g`. Under a
 * project's node_modules (npm's, or pnpm's `.pnpm` store inside it) the outermost node_modules
 * belongs to the project, which has a package.json: the command installs into that project, from
 * any working directory. A program run from its sources (no node_modules above it) gets a plain
 * `npm install`.
 */
export function installCommand(packages: readonly string[], packageDir: string): string {
  const parts = path.resolve(packageDir).split(path.sep);
  const first = parts.indexOf('node_modules');
  const names = packages.join(' ');
  if (first <= 0) return `npm install ${names}`;
  const root = parts.slice(0, first).join(path.sep) || path.sep;
  if (!existsSync(path.join(root, 'package.json'))) return `npm install -g ${names}`;
  return `npm install --prefix ${shellWord(root)} ${names}`;
}
