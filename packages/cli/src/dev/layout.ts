// The names in a dev data dir. A module of its own, without imports, because bin/run.js reads them
// before anything else loads (src/dev/early-start.ts).

export const DEV_STATE_FILE = 'dev.json';
/** Written by the server when it generated the bootstrap key itself (docs/operating.md, Embedded). */
export const SERVER_BOOTSTRAP_KEY_FILE = 'bootstrap-api-key';
/** The embedded database's directory inside the data dir (the server's layout). */
export const SERVER_DATABASE_DIR = 'pgdata';
