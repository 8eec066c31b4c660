import { cpSync, mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_DIR = fileURLToPath(new URL('../..', import.meta.url));

/**
 * A copy of the built server as an install lays it out, without its optional peers (the AWS SDK,
 * the OpenTelemetry SDK): `global` as `npm install -g` does (`<root>/lib/node_modules`, no project
 * around it), `local` as a project's dependency (`<root>/project/node_modules`, beside the project's
 * package.json). Its one dependency, PGlite, is linked from this checkout. Returns the program.
 */
export function installedServer(root: string, layout: 'global' | 'local'): { program: string; project: string | undefined } {
  const project = layout === 'local' ? path.join(root, 'project') : undefined;
  const nodeModules = project === undefined ? path.join(root, 'lib', 'node_modules') : path.join(project, 'node_modules');
  if (project !== undefined) {
    mkdirSync(project, { recursive: true });
    writeFileSync(path.join(project, 'package.json'), '{ "name": "an-operators-project", "private": true }\n');
  }
  const target = path.join(nodeModules, '@hookrelay', 'server');
  for (const entry of ['package.json', 'dist', 'migrations', 'sql']) {
    cpSync(path.join(PACKAGE_DIR, entry), path.join(target, entry), {
      recursive: true,
      filter: (source) => !source.endsWith('.map') && !source.endsWith('.d.ts'),
    });
  }
  const pglite = realpathSync(path.join(PACKAGE_DIR, 'node_modules', '@electric-sql', 'pglite'));
  mkdirSync(path.join(nodeModules, '@electric-sql'), { recursive: true });
  symlinkSync(pglite, path.join(nodeModules, '@electric-sql', 'pglite'), 'dir');
  return { program: path.join(target, 'dist', 'bin', 'hookrelay-server.js'), project };
}
