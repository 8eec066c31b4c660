import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { makeRoute, type ForwardRoute } from './routes.js';

/** The project file `listen` and `dev` read from the current directory (or `--config`). */
export const PROJECT_FILE = 'hookrelay.json';

/**
 * `hookrelay.json`, committed with the app so that the whole team forwards the same way:
 *
 * ```json
 * { "routes": [
 *     { "path": "/stripe", "forward_to": "4000" },
 *     { "event": "push", "forward_to": "3000/github" },
 *     { "forward_to": "3000" } ] }
 * ```
 * A route's `path` (a prefix) and `event` (a glob) are both optional; both given, both must match.
 */
export interface ProjectFile {
  file: string;
  routes: ForwardRoute[];
}

const ROUTE_KEYS = new Set(['path', 'event', 'forward_to']);
const TOP_KEYS = new Set(['$schema', 'routes']);

function fail(file: string, where: string, message: string): never {
  throw new Error(`${file}: ${where === '' ? '' : `${where}: `}${message}`);
}

/** Parses the text of a project file; errors name the file and the offending field. */
export function parseProjectFile(file: string, text: string): ProjectFile {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    fail(file, '', `not valid JSON (${(error as Error).message})`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) fail(file, '', 'must be a JSON object with "routes"');
  for (const key of Object.keys(data)) if (!TOP_KEYS.has(key)) fail(file, key, 'unknown field (expected "routes")');
  const routes = (data as { routes?: unknown }).routes;
  if (!Array.isArray(routes) || routes.length === 0) fail(file, 'routes', 'must be a non-empty array of { "path"?, "event"?, "forward_to" }');
  return {
    file,
    routes: routes.map((entry: unknown, index) => {
      const where = `routes.${index}`;
      if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) fail(file, where, 'must be an object');
      for (const key of Object.keys(entry)) if (!ROUTE_KEYS.has(key)) fail(file, `${where}.${key}`, 'unknown field (expected path, event, forward_to)');
      const { path, event, forward_to: target } = entry as { path?: unknown; event?: unknown; forward_to?: unknown };
      if (typeof target !== 'string' || target === '') fail(file, `${where}.forward_to`, 'must be a port, host:port/path or an http(s) URL');
      if (path !== undefined && typeof path !== 'string') fail(file, `${where}.path`, 'must be a string such as "/stripe"');
      if (event !== undefined && (typeof event !== 'string' || event === '')) fail(file, `${where}.event`, 'must be a glob such as "checkout.*"');
      try {
        return makeRoute(path ?? null, (event as string | undefined) ?? null, target);
      } catch (error) {
        return fail(file, where, (error as Error).message);
      }
    }),
  };
}

/**
 * The project file named by `--config`, else `hookrelay.json` in `cwd` when there is one, else
 * undefined. A file named by `--config` must exist.
 */
export function readProjectFile(configFlag: string | undefined, cwd: string): ProjectFile | undefined {
  const file = configFlag === undefined ? join(cwd, PROJECT_FILE) : resolve(cwd, configFlag);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if (configFlag === undefined && (error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot read ${file} (${(error as Error).message})`);
  }
  return parseProjectFile(file, text);
}
