import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { SecretBox } from './security/crypto.js';
import type { Resolver } from './security/ssrf.js';


/** What routes, workers and sweepers share: built once per process by buildApp's caller. */
export interface AppServices {
  config: Config;
  db: Database;
  secretBox: SecretBox;
  /** DNS for destination checks; tests inject one so they never touch real DNS. */
  resolveHost?: Resolver;
}
