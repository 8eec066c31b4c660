import { describe, expect, inject, it } from 'vitest';
import { openPostgres } from '../../src/db/database.js';
import { backend } from '../helpers/database.js';

/** DATABASE_URL naming the cluster's Unix socket the libpq way (docs/operating.md). */
describe.skipIf(backend() !== 'postgres')('a DATABASE_URL with a Unix-socket directory', () => {
  const port = () => new URL(inject('postgresUrl')).port;

  it.each([
    ['?host=<dir>&port=<port>', () => `postgres://postgres@/postgres?host=${encodeURIComponent(inject('postgresSocketDir'))}&port=${port()}`],
    ['a percent-encoded directory as the host', () => `postgres://postgres@${encodeURIComponent(inject('postgresSocketDir'))}:${port()}/postgres`],
  ])('%s: queries and LISTEN/NOTIFY go over the socket', async (_form, url) => {
    const db = openPostgres({ url: url(), poolSize: 2 });
    try {
      // inet_server_addr() is NULL on a Unix-socket connection, the server's address over TCP.
      const [row] = await db.sql<{ unix: boolean; user: string }>`SELECT inet_server_addr() IS NULL AS unix, current_user AS user`;
      expect(row).toEqual({ unix: true, user: 'postgres' });
      let heardPayload!: (payload: string) => void;
      const heard = new Promise<string>((resolve) => (heardPayload = resolve));
      await db.listen('unix_socket_test', heardPayload);
      await db.notify('unix_socket_test', 'over the socket');
      expect(await heard).toBe('over the socket');
    } finally {
      await db.close();
    }
  });
});
