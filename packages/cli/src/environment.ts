import type { Env } from './config.js';

/**
 * The one place where the CLI reads the process environment. Everything else receives the `Env`
 * this returns, so that configuration is parsed from one snapshot and tests can inject any env.
 */
export function processEnvironment(): Env {
  return process.env;
}
