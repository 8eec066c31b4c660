import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { configDirectory, type Env } from '../config.js';
import {
  EmbeddedServer,
  sameServerCommand,
  serverCommand,
  spawnServerProcess,
  terminateProcess,
  type EmbeddedServerOptions,
  type ServerCommand,
  type StartedServerProcess,
} from './embedded-server.js';
import { DEV_STATE_FILE, SERVER_DATABASE_DIR } from './layout.js';

/**
 * `hookrelay dev` on an existing data dir starts its server before oclif loads.
 *
 * The server's start (PGlite's) is what `dev` waits for, and oclif's import and configuration come
 * before the command runs (BENCHMARKS.md, Embedded start-up and memory). So `bin/run.js` reads the
 * few arguments the server depends on (`--port`, `--data-dir`, `--public-url`) and starts it at
 * once; the command then computes the server's command line itself, from oclif's parsed flags, and
 * takes this server over only when both are equal (`launchEmbeddedServer`). Otherwise, or when the
 * command fails or never runs, the early server is stopped. Only a data dir that `dev` has used
 * before (its database and the API key in dev.json) starts early: a new one is set up by the
 * command, and nothing is created before it.
 */

/** `--port`'s default. */
export const DEV_DEFAULT_PORT = 8787;
/** How long a server that was not taken over may take to stop before it is killed. */
const STOP_TIMEOUT_MS = 10_000;

/** The dev data dir: `--data-dir`, else `dev` in the CLI's configuration directory. */
export function devDataDir(given: string | undefined, env: Env, homeDir: string): string {
  return resolve(given ?? join(configDirectory(env, homeDir), 'dev'));
}

/**
 * The base of ingest URLs: `--public-url` without trailing slashes, else the server's own address;
 * undefined when `given` is not an http or https URL.
 */
export function devPublicUrl(given: string | undefined, port: number): string | undefined {
  if (given === undefined) return `http://127.0.0.1:${port}`;
  if (!URL.canParse(given) || !/^https?:$/u.test(new URL(given).protocol)) return undefined;
  return given.replace(/\/+$/u, '');
}

/** The server options of `hookrelay dev <args>`, when they can be read without oclif; else undefined (no early start). */
export function earlyServerOptions(args: readonly string[], env: Env, homeDir: string, serverMain?: string): Omit<EmbeddedServerOptions, 'logFile'> | undefined {
  const given = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    // Help, a version query or anything after `--` is for oclif to interpret.
    if (arg === '--' || arg === '--help' || arg === '-h' || arg === 'help' || arg === '--version') return undefined;
    // A tunnel's address, which the server needs as its public URL, is known only once the tunnel runs.
    if (arg === '--tunnel' || arg.startsWith('--tunnel=')) return undefined;
    const match = /^--(port|data-dir|public-url)(?:=(.*))?$/u.exec(arg);
    if (match === null) continue;
    const name = match[1]!;
    const value = match[2] ?? args[++i];
    if (value === undefined || given.has(name)) return undefined;
    given.set(name, value);
  }
  const portText = given.get('port');
  const port = portText === undefined ? DEV_DEFAULT_PORT : /^\d{1,5}$/u.test(portText) ? Number(portText) : NaN;
  if (!(port >= 1 && port <= 65_535)) return undefined;
  const publicUrl = devPublicUrl(given.get('public-url'), port);
  if (publicUrl === undefined) return undefined;
  const dataDir = devDataDir(given.get('data-dir'), env, homeDir);
  if (!existsSync(join(dataDir, SERVER_DATABASE_DIR))) return undefined;
  // Read here without the state module's checks (and its imports): the command checks the key
  // (src/dev/state.ts) and takes this server over only when it was given the same one.
  let apiKey: unknown;
  try {
    apiKey = (JSON.parse(readFileSync(join(dataDir, DEV_STATE_FILE), 'utf8')) as { api_key?: unknown } | null)?.api_key;
  } catch {
    return undefined;
  }
  if (typeof apiKey !== 'string' || apiKey === '') return undefined;
  return { dataDir, port, apiKey, publicUrl, env, ...(serverMain === undefined ? {} : { serverMain }) };
}

interface EarlyServer extends StartedServerProcess {
  command: ServerCommand;
  child: ChildProcess;
  /** Settles when the process has closed. */
  exited: Promise<void>;
  /** Hands the process over: its output and its stop go to the caller from now on. */
  release(): void;
}

let early: EarlyServer | undefined;

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const SIGNAL_NUMBERS = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 } as const;

/** Starts the server of `hookrelay dev <args>` when `earlyServerOptions` can tell what it is. */
export function startServerEarly(args: readonly string[], env: Env, homeDir: string, serverMain?: string): void {
  if (early !== undefined) return;
  let command: ServerCommand;
  try {
    const options = earlyServerOptions(args, env, homeDir, serverMain);
    if (options === undefined) return;
    command = serverCommand(options);
  } catch {
    return; // the command finds and reports whatever is wrong
  }
  const child = spawnServerProcess(command);
  const output: Buffer[] = [];
  const keep = (chunk: Buffer): void => void output.push(chunk);
  // Until the command takes over, the CLI going away (a bad flag, Ctrl-C while oclif loads) stops
  // the server: it runs in its own process group, so the terminal's signals do not reach it.
  const stopOnExit = (): void => void child.kill('SIGTERM');
  const stopOnSignal = (signal: (typeof STOP_SIGNALS)[number]): void => {
    child.kill('SIGTERM');
    process.exit(128 + SIGNAL_NUMBERS[signal]);
  };
  const started: EarlyServer = {
    command,
    child,
    output,
    exited: new Promise((resolve) =>
      child.once('close', (code, signal) => {
        started.closed = { code, signal };
        resolve();
      }),
    ),
    release() {
      child.stdout?.off('data', keep);
      child.stderr?.off('data', keep);
      process.off('exit', stopOnExit);
      for (const signal of STOP_SIGNALS) process.off(signal, stopOnSignal);
    },
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  process.once('exit', stopOnExit);
  for (const signal of STOP_SIGNALS) process.once(signal, stopOnSignal);
  early = started;
}

/**
 * The command's server: the early-started one when it was started with this same command line,
 * else a new one (after the early one, which may hold the data dir's lock, has stopped).
 */
export async function launchEmbeddedServer(options: EmbeddedServerOptions): Promise<EmbeddedServer> {
  const command = serverCommand(options);
  const started = early;
  early = undefined;
  if (started !== undefined) {
    started.release();
    if (sameServerCommand(started.command, command)) return EmbeddedServer.of(started.child, options, started);
    await terminateProcess(started.child, started.exited, STOP_TIMEOUT_MS);
  }
  return EmbeddedServer.of(spawnServerProcess(command), options);
}
