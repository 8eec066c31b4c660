import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { SampleProvider } from '@hookrelay/shared';
import { isProvider, PROVIDERS } from '@hookrelay/shared/providers';
import { makeRoute, type ForwardRoute } from './routes.js';

/** The project file `listen` and `dev` read from the current directory (or `--config`). */
export const PROJECT_FILE = 'hookrelay.json';

/**
 * `hookrelay.json`, committed with the app so that the whole team forwards the same way:
 *
 * ```json
 * { "verify": { "stripe": "env:STRIPE_WEBHOOK_SECRET" },
 *   "routes": [
 *     { "provider": "stripe", "forward_to": "4000" },
 *     { "event": "push", "forward_to": "3000/github" },
 *     { "forward_to": "3000" } ] }
 * ```
 * A route's `provider`, `path` (a prefix) and `event` (a glob) are optional; all given, all must
 * match. `verify` is `hookrelay dev`'s: the secret of each provider its endpoints verify, as given
 * (`env:NAME` is read by dev from the environment); `listen` ignores it.
 */
export interface ProjectFile {
  file: string;
  routes: ForwardRoute[];
  /** In the file's order; empty without `verify`. */
  verify: { provider: SampleProvider; secret: string }[];
}

const ROUTE_KEYS = new Set(['provider', 'path', 'event', 'forward_to']);
const TOP_KEYS = new Set(['$schema', 'verify', 'routes']);

function parseVerify(file: string, value: unknown): ProjectFile['verify'] {
  if (value === undefined) return [];
  const shape = `must be an object of provider names (${PROVIDERS.join(', ')}) to secrets`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(file, 'verify', shape);
  const entries = Object.entries(value);
  if (entries.length === 0) fail(file, 'verify', shape);
  return entries.map(([provider, secret]) => {
    if (!isProvider(provider)) fail(file, `verify.${provider}`, `unknown provider (expected ${PROVIDERS.join(', ')})`);
    if (typeof secret !== 'string' || secret === '') fail(file, `verify.${provider}`, 'must be the secret, or env:NAME to read it from the environment variable NAME');
    return { provider, secret };
  });
}

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
  for (const key of Object.keys(data)) if (!TOP_KEYS.has(key)) fail(file, key, 'unknown field (expected "verify", "routes")');
  const { routes, verify } = data as { routes?: unknown; verify?: unknown };
  if (!Array.isArray(routes) || routes.length === 0) fail(file, 'routes', 'must be a non-empty array of { "provider"?, "path"?, "event"?, "forward_to" }');
  return {
    file,
    verify: parseVerify(file, verify),
    routes: routes.map((entry: unknown, index) => {
      const where = `routes.${index}`;
      if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) fail(file, where, 'must be an object');
      for (const key of Object.keys(entry)) if (!ROUTE_KEYS.has(key)) fail(file, `${where}.${key}`, 'unknown field (expected provider, path, event, forward_to)');
      const { provider, path, event, forward_to: target } = entry as { provider?: unknown; path?: unknown; event?: unknown; forward_to?: unknown };
      if (typeof target !== 'string' || target === '') fail(file, `${where}.forward_to`, 'must be a port, host:port/path or an http(s) URL');
      if (provider !== undefined && (typeof provider !== 'string' || !isProvider(provider))) fail(file, `${where}.provider`, `must be one of ${PROVIDERS.join(', ')}`);
      if (path !== undefined && typeof path !== 'string') fail(file, `${where}.path`, 'must be a string such as "/stripe"');
      if (event !== undefined && (typeof event !== 'string' || event === '')) fail(file, `${where}.event`, 'must be a glob such as "checkout.*"');
      try {
        return makeRoute(path ?? null, (event as string | undefined) ?? null, target, provider ?? null);
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
