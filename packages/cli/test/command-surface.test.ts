import { fileURLToPath } from 'node:url';
import { Config, type Command } from '@oclif/core';
import { describe, expect, it } from 'vitest';
import { ensureFreshManifest } from '../src/manifest-cache.js';

/**
 * The command and flag surface of the built CLI, locked like oclif's command snapshot: every
 * command id with its arguments and its flags (type, required, multiple, options, …). Scripts
 * depend on these names, so a change must be deliberate: it shows in review as a change of
 * `__snapshots__/command-surface.json`. After a deliberate change, rebuild and run
 * `npx vitest run --project cli -u`.
 *
 * It reads the compiled commands (dist/): build first (`npx tsc -b packages/cli`).
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));

type CachedFlag = Command.Cached['flags'][string];
type CachedArg = Command.Cached['args'][string];

function describeFlag(flag: CachedFlag): Record<string, unknown> {
  const out: Record<string, unknown> = { type: flag.type };
  if (flag.char !== undefined) out.char = flag.char;
  if (flag.required === true) out.required = true;
  if (flag.type === 'option') {
    if (flag.multiple === true) out.multiple = true;
    if (flag.delimiter !== undefined) out.delimiter = flag.delimiter;
    if (flag.options !== undefined) out.options = [...flag.options];
    if (flag.default !== undefined) out.default = flag.default;
  } else if (flag.allowNo) {
    out.allowNo = true;
  }
  if (flag.aliases !== undefined && flag.aliases.length > 0) out.aliases = [...flag.aliases].sort();
  if (flag.exclusive !== undefined && flag.exclusive.length > 0) out.exclusive = [...flag.exclusive].sort();
  if (flag.dependsOn !== undefined && flag.dependsOn.length > 0) out.dependsOn = [...flag.dependsOn].sort();
  return out;
}

function describeArg(name: string, arg: CachedArg): Record<string, unknown> {
  const out: Record<string, unknown> = { name };
  if (arg.required === true) out.required = true;
  if (arg.options !== undefined) out.options = [...arg.options];
  return out;
}

/** The flags every hookrelay command has (BaseCommand); listed once in the snapshot. */
const GLOBAL_FLAGS = ['api-key', 'api-url', 'json', 'profile'];

async function commandSurface(): Promise<Record<string, unknown>> {
  // A manifest left from an earlier build would show the old surface: make sure it is current.
  await ensureFreshManifest(ROOT);
  const config = await Config.load({ root: ROOT });
  const commands = [...config.commands].sort((a, b) => a.id.localeCompare(b.id));
  const reference = commands.find((command) => command.id === 'whoami');
  if (reference === undefined) throw new Error('no whoami command: is dist/ built?');
  const globalFlags = Object.fromEntries(GLOBAL_FLAGS.map((name) => [name, describeFlag(reference.flags[name] as CachedFlag)]));
  const isGlobal = (name: string, flag: CachedFlag): boolean =>
    name in globalFlags && JSON.stringify(describeFlag(flag)) === JSON.stringify(globalFlags[name]);

  const surface: Record<string, unknown> = {};
  for (const command of commands) {
    const ours = command.pluginName === '@hookrelay/cli';
    const names = Object.keys(command.flags).sort();
    const flags = Object.fromEntries(
      names.filter((name) => !(ours && isGlobal(name, command.flags[name] as CachedFlag))).map((name) => [name, describeFlag(command.flags[name] as CachedFlag)]),
    );
    surface[command.id] = {
      ...(ours ? {} : { plugin: command.pluginName }),
      ...(command.aliases.length > 0 ? { aliases: [...command.aliases].sort() } : {}),
      ...(command.hidden ? { hidden: true } : {}),
      ...(command.strict === false ? { variadic: true } : {}),
      // Every command of ours has the global flags; one that lacks some would show it here.
      ...(ours && !GLOBAL_FLAGS.every((name) => names.includes(name)) ? { missing_global_flags: GLOBAL_FLAGS.filter((name) => !names.includes(name)) } : {}),
      args: Object.entries(command.args).map(([name, arg]) => describeArg(name, arg)),
      flags,
    };
  }
  return { global_flags: globalFlags, commands: surface };
}

describe('command surface', () => {
  it('matches the committed snapshot (regenerate with -u after a deliberate change)', async () => {
    const surface = await commandSurface();
    await expect(`${JSON.stringify(surface, null, 2)}\n`).toMatchFileSnapshot('./__snapshots__/command-surface.json');
  });

  it('gives every command the global flags and a summary with examples', async () => {
    await ensureFreshManifest(ROOT);
    const config = await Config.load({ root: ROOT });
    const ours = config.commands.filter((command) => command.pluginName === '@hookrelay/cli');
    expect(ours.length).toBeGreaterThan(20);
    for (const command of ours) {
      // mcp's stdout is the protocol's: it has no JSON output of its own to ask for.
      const global = command.id === 'mcp' ? ['api-url', 'api-key', 'profile'] : ['api-url', 'api-key', 'profile', 'json'];
      expect(Object.keys(command.flags), command.id).toEqual(expect.arrayContaining(global));
      if (command.id === 'mcp') expect(Object.keys(command.flags)).not.toContain('json');
      expect(command.summary, command.id).toBeTruthy();
      expect(command.examples?.length ?? 0, command.id).toBeGreaterThan(0);
    }
  });

  it('has every documented command, noun then verb (messages, logs, events and their types, pull endpoints and events, bulk jobs, portal links, completion)', async () => {
    await ensureFreshManifest(ROOT);
    const config = await Config.load({ root: ROOT });
    const ids = new Set(config.commands.map((command) => command.id));
    const expected = [
      ...['send', 'get', 'attempts', 'retry', 'delete', 'delete-batch'].map((verb) => `messages:${verb}`),
      'logs',
      ...['send', 'get', 'list'].map((verb) => `events:${verb}`),
      ...['create', 'list', 'get', 'update', 'delete'].map((verb) => `event-types:${verb}`),
      ...['create', 'list', 'get', 'update', 'pause', 'resume', 'delete'].map((verb) => `pull:${verb}`),
      ...['list', 'get', 'ack', 'ack-batch', 'delete', 'delete-batch', 'delete-all'].map((verb) => `pull:events:${verb}`),
      ...['list', 'get', 'cancel'].map((verb) => `jobs:${verb}`),
      ...['create', 'list', 'revoke'].map((verb) => `portal-links:${verb}`),
      'inbound:replay',
      'autocomplete',
    ];
    for (const id of expected) expect(ids, id).toContain(id);
  });
});
