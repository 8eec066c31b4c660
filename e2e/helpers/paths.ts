import { fileURLToPath } from 'node:url';

/** The repository root, found from this file so tests run from any working directory. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const SERVER_MAIN = fileURLToPath(new URL('../../packages/server/dist/bin/hookrelay-server.js', import.meta.url));
export const CLI_BIN = fileURLToPath(new URL('../../packages/cli/bin/run.js', import.meta.url));
