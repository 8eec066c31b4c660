import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * What a command loads before it runs. The index of `@hookrelay/shared` builds every zod schema of
 * the API (about 145 ms of CPU), so a command that only names a constant or a class takes it from
 * one of the package's zod-free subpaths (`/client`, `/ids`, `/constants`, …). Only the long-running
 * commands below validate with a schema at run time; they may pay for it.
 *
 * Each compiled command module (dist/commands) and hook is imported in a fresh Node process with a
 * resolve hook that records every module resolved and the module that asked for it, so that a
 * value import of the index, of a schema module or of zod itself, however indirect, shows as the
 * chain of imports that reached zod. The MCP SDK is fenced the same way: only `hookrelay mcp` loads
 * it, when it runs. Build first (`npx tsc -b packages/cli`).
 */

/** Commands that parse with schemas while they run (stream frames, the cursor file), as paths under dist/commands. */
const LONG_RUNNING = ['listen.js'];

const CLI_ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = path.join(CLI_ROOT, 'dist');

interface Resolution {
  url: string;
  parent: string | undefined;
}

/** Whether a resolved module is zod or the shared package's index (which imports every schema). */
const isSchemaCost = (url: string): boolean => /\/node_modules\/zod\//u.test(url) || /\/shared\/dist\/index\.js$/u.test(url);

/** Whether a resolved module is part of the MCP SDK, which only `hookrelay mcp` needs. */
const isMcpSdk = (url: string): boolean => /\/node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?@modelcontextprotocol\/sdk\//u.test(url);

/** The dist modules oclif imports to run a command: each command's file (from src, so none is missed) and each hook. */
function commandModules(): string[] {
  const found: string[] = [];
  for (const folder of ['commands', 'hooks']) {
    for (const entry of readdirSync(path.join(CLI_ROOT, 'src', folder), { withFileTypes: true, recursive: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
      const source = path.relative(path.join(CLI_ROOT, 'src'), path.join(entry.parentPath, entry.name));
      found.push(source.split(path.sep).join('/').replace(/\.ts$/u, '.js'));
    }
  }
  return found.sort();
}

/**
 * The chains `commands/x.js → … → shared/dist/index.js` (or `… → zod/index.js`) by which the
 * schemas were first reached, one per way in, shortest first; empty when they never were. Modules
 * of the CLI as paths under dist/, those of packages by the package's name.
 */
function schemaChains(resolutions: readonly Resolution[]): string[] {
  const firstParent = new Map<string, string | undefined>();
  for (const { url, parent } of resolutions) if (!firstParent.has(url)) firstParent.set(url, parent);
  const label = (url: string): string => {
    if (url.startsWith(pathToFileURL(DIST).href)) return url.slice(pathToFileURL(DIST).href.length + 1);
    const inPackage = /\/node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)\/(.*)$/u.exec(url);
    if (inPackage !== null) return `${inPackage[1]}/${inPackage[2]}`;
    return url.replace(/^.*\/packages\//u, '');
  };
  const chains: string[] = [];
  for (const url of firstParent.keys()) {
    if (!isSchemaCost(url)) continue;
    const chain = [url];
    // Up to the module imported first (the importing script itself was never resolved).
    for (let at = firstParent.get(url); at !== undefined && firstParent.has(at) && !chain.includes(at); at = firstParent.get(at)) chain.unshift(at);
    // Only where the schemas are first entered: zod reached through the index is the index's chain.
    if (chain.slice(0, -1).some(isSchemaCost)) continue;
    chains.push(chain.map(label).join(' → '));
  }
  return chains.sort((a, b) => a.length - b.length || a.localeCompare(b));
}

const workDir = mkdtempSync(path.join(tmpdir(), 'hookrelay-start-up-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

const HOOKS = `import { appendFileSync } from 'node:fs';
let out;
export function initialize(data) { out = data.out; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(out, JSON.stringify({ url: result.url, parent: context.parentURL }) + '\\n');
  return result;
}
`;

/**
 * Imports `modules` (paths under dist/) one after the other in a fresh Node process and answers
 * every ESM resolution it made, and the CommonJS modules that were required.
 */
function importInFreshProcess(name: string, modules: readonly string[]): { resolutions: Resolution[]; required: string[] } {
  const hooks = path.join(workDir, 'hooks.mjs');
  writeFileSync(hooks, HOOKS);
  const out = path.join(workDir, `${name}.ndjson`);
  writeFileSync(out, '');
  const script = `import { register, createRequire } from 'node:module';
register(${JSON.stringify(pathToFileURL(hooks).href)}, { data: { out: ${JSON.stringify(out)} } });
for (const file of ${JSON.stringify(modules.map((m) => pathToFileURL(path.join(DIST, m)).href))}) await import(file);
process.stdout.write(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)));
`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: CLI_ROOT, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
  expect(child.status, `importing ${name}: ${child.stderr}`).toBe(0);
  const resolutions = readFileSync(out, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Resolution);
  return { resolutions, required: JSON.parse(child.stdout) as string[] };
}

describe('CLI start-up: what a command imports', () => {
  const modules = commandModules();
  const short = modules.filter((m) => !LONG_RUNNING.some((long) => m === `commands/${long}`));

  it('sees every command and hook, each compiled', () => {
    expect(modules.length).toBeGreaterThan(60);
    expect(modules).toEqual(expect.arrayContaining(['commands/whoami.js', 'commands/endpoints/list.js', 'commands/events/send.js', 'hooks/command-not-found.js']));
    for (const long of LONG_RUNNING) expect(modules).toContain(`commands/${long}`);
    expect(modules.filter((m) => !existsSync(path.join(DIST, m)))).toEqual([]);
  });

  it('loads no zod schema for a short command: no value import reaches the shared index or zod', () => {
    const { resolutions, required } = importInFreshProcess('short', short);
    // The imports were seen: every module asked for, the shared client among them.
    expect(resolutions.length).toBeGreaterThan(short.length);
    expect(resolutions.some((r) => r.url.endsWith('/shared/dist/client.js'))).toBe(true);
    expect(schemaChains(resolutions)).toEqual([]);
    expect(required.filter((file) => /[/\\]node_modules[/\\].*zod[/\\]/u.test(file))).toEqual([]);
  });

  it('loads the MCP SDK for no command: mcp imports it when it runs, from mcp/server.js', () => {
    const { resolutions } = importInFreshProcess('all', modules);
    expect(resolutions.filter((r) => isMcpSdk(r.url)).map((r) => r.url)).toEqual([]);
    // The fence sees the SDK where it is imported.
    const server = importInFreshProcess('mcp-server', ['mcp/server.js']);
    expect(server.resolutions.some((r) => isMcpSdk(r.url))).toBe(true);
  });

  it.each(LONG_RUNNING)('sees the schemas that %s, a long-running command, loads (else it belongs with the others)', (long) => {
    const { resolutions } = importInFreshProcess(long.replace(/\W/gu, '-'), [`commands/${long}`]);
    expect(schemaChains(resolutions).length).toBeGreaterThan(0);
  });
});

describe('the fence itself', () => {
  const dist = pathToFileURL(DIST).href;
  const zod = 'file:///repo/node_modules/.pnpm/zod@4.1.12/node_modules/zod';

  it('names the chain from the command to the shared index and on to zod', () => {
    const resolutions: Resolution[] = [
      { url: `${dist}/commands/logs.js`, parent: undefined },
      { url: `${dist}/format/messages.js`, parent: `${dist}/commands/logs.js` },
      { url: 'file:///repo/packages/shared/dist/client.js', parent: `${dist}/format/messages.js` },
      { url: `${dist}/list-command.js`, parent: `${dist}/commands/logs.js` },
      { url: 'file:///repo/packages/shared/dist/index.js', parent: `${dist}/list-command.js` },
      { url: 'file:///repo/packages/shared/dist/schemas/common.js', parent: 'file:///repo/packages/shared/dist/index.js' },
      { url: `${zod}/index.js`, parent: 'file:///repo/packages/shared/dist/schemas/common.js' },
      { url: `${zod}/v4/classic/external.js`, parent: `${zod}/index.js` },
    ];
    expect(schemaChains(resolutions)).toEqual(['commands/logs.js → list-command.js → shared/dist/index.js']);
  });

  it('finds zod imported without the index, and nothing in a graph without it', () => {
    expect(
      schemaChains([
        { url: `${dist}/commands/trigger.js`, parent: undefined },
        { url: 'file:///repo/packages/shared/dist/sample-outcome.js', parent: `${dist}/commands/trigger.js` },
        { url: `${zod}/index.js`, parent: 'file:///repo/packages/shared/dist/sample-outcome.js' },
      ]),
    ).toEqual(['commands/trigger.js → shared/dist/sample-outcome.js → zod/index.js']);
    expect(
      schemaChains([
        { url: `${dist}/commands/whoami.js`, parent: undefined },
        { url: 'file:///repo/packages/shared/dist/client.js', parent: `${dist}/commands/whoami.js` },
      ]),
    ).toEqual([]);
  });
});
