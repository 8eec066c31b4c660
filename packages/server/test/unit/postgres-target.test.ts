import { describe, expect, it } from 'vitest';
import { postgresTarget } from '../../src/db/database.js';

/** DATABASE_URL in libpq's forms, as postgres.js is given it. */
describe('postgresTarget', () => {
  it('leaves a plain TCP URL alone, and postgres.js’s multi-host form too', () => {
    expect(postgresTarget('postgres://u:p@db.internal:5433/hookrelay?sslmode=require')).toEqual({
      url: 'postgres://u:p@db.internal:5433/hookrelay?sslmode=require',
    });
    expect(postgresTarget('postgres://u:p@db1:5432,db2:5433/hookrelay?target_session_attrs=read-write')).toEqual({
      url: 'postgres://u:p@db1:5432,db2:5433/hookrelay?target_session_attrs=read-write',
    });
  });

  it('takes ?host=<directory> as the Unix socket, with the URL port or ?port=', () => {
    expect(postgresTarget('postgres://u@/db?host=/run/postgresql')).toEqual({ url: 'postgres://u@localhost/db', socketPath: '/run/postgresql/.s.PGSQL.5432' });
    expect(postgresTarget('postgresql:///db?host=/tmp/pg/&port=5444')).toEqual({ url: 'postgresql://localhost:5444/db', socketPath: '/tmp/pg/.s.PGSQL.5444' });
    expect(postgresTarget('postgres://u:p@localhost:5433/db?host=/tmp/pg&sslmode=disable')).toEqual({
      url: 'postgres://u:p@localhost:5433/db?sslmode=disable',
      socketPath: '/tmp/pg/.s.PGSQL.5433',
    });
  });

  it('takes a percent-encoded directory as the host as the Unix socket', () => {
    expect(postgresTarget('postgres://u@%2Ftmp%2Fpg:6000/db')).toEqual({ url: 'postgres://u@localhost:6000/db', socketPath: '/tmp/pg/.s.PGSQL.6000' });
  });

  it('moves ?host=<name> and ?port= into the URL instead of sending them to the server as settings', () => {
    expect(postgresTarget('postgres://u@h/db?host=db2&application_name=x')).toEqual({ url: 'postgres://u@db2/db?application_name=x' });
    expect(postgresTarget('postgres://u@h:1/db?port=7')).toEqual({ url: 'postgres://u@h:7/db' });
  });
});
