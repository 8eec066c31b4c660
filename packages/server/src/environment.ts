/**
 * The process environment, read here only: the process entries (main.ts, launch.ts) pass it on, and
 * everything else receives a parsed Config. A module of its own so that the launcher loads no more.
 */
export function processEnvironment(): Readonly<Record<string, string | undefined>> {
  return process.env;
}
