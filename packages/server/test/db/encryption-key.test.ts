import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sign as githubSign } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminError } from '../../src/admin/commands.js';
import { resealSecrets } from '../../src/admin/encryption-key.js';
import { openPGlite, openPostgres, type Database } from '../../src/db/database.js';
import { insertProject } from '../../src/db/projects.js';
import { SEALED_COLUMNS } from '../../src/db/sealed-secrets.js';
import { SecretBox, sha256Hex } from '../../src/security/crypto.js';
import { backend, createPostgresDatabaseUrl, createTestDatabase, interceptSql } from '../helpers/database.js';
import { SERVER_MAIN, startServerProcess, type ServerProcess } from '../helpers/process.js';
import { Receiver } from '../helpers/receiver.js';

/**
 * The encryption key against the database it opens: a start with keys that do not open the stored
 * secrets refuses before it writes anything, and a key is replaced without losing a secret
 * (HOOKRELAY_PREVIOUS_ENCRYPTION_KEY and `hookrelay-server encryption rotate-key`; in embedded mode
 * the command makes the new key in the data dir). Real server processes, on the project's backend.
 */

const API_KEY = `hr_${randomBytes(20).toString('hex')}`;
const HMAC_SECRET = `hmac-${randomBytes(12).toString('hex')}`;
const newKey = () => randomBytes(32).toString('hex');

let receiver: Receiver;
const dirs: string[] = [];
const started: ServerProcess[] = [];

beforeAll(async () => {
  receiver = await Receiver.start();
});
afterAll(async () => {
  await Promise.all(started.map((s) => s.stop(2000)));
  await receiver?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** One deployment: a database (PostgreSQL, or PGlite in `dataDir`) and the environment its processes share. */
interface Deployment {
  dataDir: string;
  databaseUrl: string | undefined;
  env(extra?: Record<string, string>): Record<string, string>;
  /** The database, opened in this process while no server runs. */
  open(): Promise<Database>;
}

async function deployment(): Promise<Deployment> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-keys-'));
  dirs.push(root);
  const dataDir = path.join(root, 'data');
  const databaseUrl = backend() === 'postgres' ? await createPostgresDatabaseUrl() : undefined;
  return {
    dataDir,
    databaseUrl,
    env: (extra = {}) => ({
      HOOKRELAY_DATA_DIR: dataDir,
      HOOKRELAY_BOOTSTRAP_API_KEY: API_KEY,
      HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true',
      HOOKRELAY_TLS_CA_FILE: receiver.caFile,
      HOOKRELAY_RETRY_SCHEDULE: '1',
      ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }),
      ...extra,
    }),
    open: async () => (databaseUrl === undefined ? openPGlite({ dataDir: path.join(dataDir, 'pgdata') }) : openPostgres({ url: databaseUrl, poolSize: 1 })),
  };
}

async function start(env: Record<string, string>): Promise<ServerProcess> {
  const server = await startServerProcess(env, 90_000);
  started.push(server);
  return server;
}

interface Ended {
  /** The exit code, or 'listening' when the process started to serve (it is then stopped). */
  code: number | null | 'listening';
  stdout: string;
  stderr: string;
}

/** Runs `hookrelay-server <args>` to its end (bounded); a `start` that gets to listen is stopped and reported. */
async function run(args: string[], env: Record<string, string>, timeoutMs = 90_000): Promise<Ended> {
  const child = spawn(process.execPath, [SERVER_MAIN, ...args], {
    env: { PATH: process.env.PATH ?? '', HOOKRELAY_PORT: '0', HOOKRELAY_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise<Ended>((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    let listening = false;
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (!listening && stdout.includes('hookrelay-server listening on')) {
        listening = true;
        child.kill('SIGTERM');
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code: listening ? 'listening' : code, stdout, stderr });
    });
  });
}

async function api(server: ServerProcess, method: string, url: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${server.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${API_KEY}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  return { status: res.status, json: text.startsWith('{') ? JSON.parse(text) : undefined };
}

interface Secrets {
  outboundId: string;
  signingSecret: string;
  inboundId: string;
  ingestToken: string;
  route: { path: string; url: string };
}

/** An outbound endpoint (a signing key) and an inbound endpoint with an HMAC secret: every sealed column holds a secret. */
async function createSecrets(server: ServerProcess): Promise<Secrets> {
  const route = receiver.route();
  const outbound = await api(server, 'POST', '/v1/endpoints', { url: route.url });
  expect(outbound.status, JSON.stringify(outbound.json)).toBe(201);
  const inbound = await api(server, 'POST', '/v1/inbound-endpoints', {
    name: 'signed',
    mode: 'cli',
    verify_hmac: true,
    hmac_scheme: 'github',
    hmac_secret: HMAC_SECRET,
  });
  expect(inbound.status, JSON.stringify(inbound.json)).toBe(201);
  return {
    outboundId: outbound.json.data.id,
    signingSecret: outbound.json.data.signing_secret,
    inboundId: inbound.json.data.id,
    ingestToken: inbound.json.data.secret_token,
    route,
  };
}

/** Every secret works: the ingest URL is shown, a signed webhook passes HMAC verification, a delivery is signed with the endpoint's secret. */
async function expectSecretsWork(server: ServerProcess, secrets: Secrets): Promise<void> {
  const shown = await api(server, 'GET', `/v1/inbound-endpoints/${secrets.inboundId}`);
  expect(shown.status, JSON.stringify(shown.json)).toBe(200);
  expect(shown.json.data.ingest_url).toMatch(new RegExp(`/in/${secrets.ingestToken}$`));

  const body = `{"n":"${randomBytes(4).toString('hex')}"}`;
  const ingest = (signature: string) =>
    fetch(`${server.url}/in/${secrets.ingestToken}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
      body,
      signal: AbortSignal.timeout(15_000),
    });
  expect((await ingest(await githubSign(HMAC_SECRET, body))).status).toBe(200);
  expect((await ingest(await githubSign('not-the-secret', body))).status).toBe(401);

  const before = receiver.received(secrets.route.path).length;
  const message = await api(server, 'POST', '/v1/messages', { endpoint_id: secrets.outboundId, payload: { n: before } });
  expect(message.status, JSON.stringify(message.json)).toBe(202);
  const received = (await receiver.waitFor(secrets.route.path, before + 1, 30_000))[before]!;
  expect(() => new Webhook(secrets.signingSecret).verify(received.body.toString(), received.headers as Record<string, string>)).not.toThrow();
}

/** Every row of every table, and the data dir's files beside the database: what "nothing was changed" means. */
async function snapshot(d: Deployment): Promise<{ rows: Record<string, string>; files: Record<string, string> }> {
  const db = await d.open();
  const rows: Record<string, string> = {};
  try {
    const tables = await db.sql<{ name: string }>`
      SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`;
    for (const { name } of tables) {
      const [row] = await db.sql<{ rows: string }>([
        `SELECT coalesce(json_agg(r ORDER BY r::text), '[]'::json)::text AS rows FROM (SELECT to_jsonb(t) AS r FROM "${name}" t) s`,
      ] as unknown as TemplateStringsArray);
      rows[name] = row!.rows;
    }
  } finally {
    await db.close();
  }
  const files: Record<string, string> = {};
  if (existsSync(d.dataDir)) {
    for (const name of readdirSync(d.dataDir)) {
      if (name === 'pgdata') continue;
      const file = path.join(d.dataDir, name);
      files[name] = statSync(file).isFile() ? readFileSync(file, 'utf8') : '(directory)';
    }
  }
  return { rows, files };
}

async function sealedValues(d: Deployment): Promise<string[]> {
  const db = await d.open();
  try {
    const signing = await db.sql<{ v: string }>`SELECT secret_encrypted AS v FROM signing_keys ORDER BY id`;
    const inbound = await db.sql<{ t: string; h: string | null }>`
      SELECT secret_token_encrypted AS t, hmac_secret_encrypted AS h FROM inbound_endpoints ORDER BY seq`;
    return [...signing.map((r) => r.v), ...inbound.flatMap((r) => [r.t, ...(r.h === null ? [] : [r.h])])];
  } finally {
    await db.close();
  }
}

function opensAll(key: string, sealed: string[]): boolean {
  const box = new SecretBox(Buffer.from(key, 'hex'));
  return sealed.every((token) => {
    try {
      box.decrypt(token);
      return true;
    } catch {
      return false;
    }
  });
}

describe('the sealed columns', () => {
  it('are every column of the schema that holds an encrypted secret', async () => {
    const db = await createTestDatabase();
    try {
      const columns = await db.sql<{ name: string }>`
        SELECT table_name || '.' || column_name AS name FROM information_schema.columns
        WHERE table_schema = 'public' AND column_name LIKE '%encrypted%' ORDER BY 1`;
      expect(columns.map((c) => c.name)).toEqual([...SEALED_COLUMNS].sort());
    } finally {
      await db.close();
    }
  });
});

describe('resealSecrets', () => {
  const keyA = randomBytes(32);
  const keyB = randomBytes(32);
  const boxA = new SecretBox(keyA);
  const boxB = new SecretBox(keyB);
  const both = new SecretBox(keyB, [keyA]);

  /** An inbound endpoint whose token and HMAC secret are sealed by `box`; its seq. */
  async function endpoint(db: Database, box: SecretBox, hmac: string): Promise<string> {
    const [project] = await db.sql<{ id: string }>`SELECT id FROM projects LIMIT 1`;
    const token = randomBytes(16).toString('hex');
    const [row] = await db.sql<{ seq: string }>`
      INSERT INTO inbound_endpoints (id, project_id, name, mode, secret_token_encrypted, secret_token_hash, hmac_secret_encrypted)
      VALUES (gen_random_uuid(), ${project!.id}, 'e', 'cli', ${box.encrypt(token)}, ${sha256Hex(token)}, ${box.encrypt(hmac)})
      RETURNING seq::text AS seq`;
    return row!.seq;
  }

  async function hmacOf(db: Database, seq: string): Promise<string> {
    const [row] = await db.sql<{ h: string }>`SELECT hmac_secret_encrypted AS h FROM inbound_endpoints WHERE seq = ${seq}::bigint`;
    return row!.h;
  }

  /** `db.sql` that runs `after` right after each read of a page of HMAC secrets (outside any transaction). */
  const afterHmacPage = (db: Database, after: () => Promise<void>) =>
    interceptSql(db.sql, async (strings, _values, run) => {
      const result = await run();
      if (strings.join('?').includes('hmac_secret_encrypted AS sealed')) await after();
      return result;
    });

  it('keeps a secret changed between its read and its update, and seals it again on the next pass when the old key sealed it', async () => {
    const db = await createTestDatabase();
    try {
      await insertProject(db.sql, 'reseal');
      const seqs = [await endpoint(db, boxA, 'one'), await endpoint(db, boxA, 'two')];
      let changes = 0;
      const sql = afterHmacPage(db, async () => {
        // Once: as a process still on the old key alone would, through the API.
        if (changes++ === 0) await db.sql`UPDATE inbound_endpoints SET hmac_secret_encrypted = ${boxA.encrypt('changed')} WHERE seq = ${seqs[0]}::bigint`;
      });
      const result = await resealSecrets(sql, both);
      expect(result.unreadable).toEqual([]);
      expect(result.secrets).toBe(4);
      // Two tokens and the unchanged HMAC secret on the first pass, the changed one on the second.
      expect(result.resealed['inbound_endpoints.secret_token_encrypted']).toBe(2);
      expect(result.resealed['inbound_endpoints.hmac_secret_encrypted']).toBe(2);
      expect(boxB.decrypt(await hmacOf(db, seqs[0]!))).toBe('changed');
      expect(boxB.decrypt(await hmacOf(db, seqs[1]!))).toBe('two');
    } finally {
      await db.close();
    }
  });

  it('gives up, saying why, when secrets keep arriving under the old key', async () => {
    const db = await createTestDatabase();
    try {
      await insertProject(db.sql, 'reseal');
      const seq = await endpoint(db, boxA, 'one');
      const sql = afterHmacPage(db, async () => {
        await db.sql`UPDATE inbound_endpoints SET hmac_secret_encrypted = ${boxA.encrypt('again')} WHERE seq = ${seq}::bigint`;
      });
      const failure = await resealSecrets(sql, both).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(AdminError);
      expect((failure as Error).message).toMatch(/still being written under the previous key after 5 passes/);
    } finally {
      await db.close();
    }
  });

  it('reports the secrets no key opens and seals the others', async () => {
    const db = await createTestDatabase();
    try {
      await insertProject(db.sql, 'reseal');
      const lost = await endpoint(db, new SecretBox(randomBytes(32)), 'lost');
      const kept = await endpoint(db, boxA, 'kept');
      const result = await resealSecrets(db.sql, both);
      expect(result.unreadable).toEqual([
        { column: 'inbound_endpoints.secret_token_encrypted', id: lost },
        { column: 'inbound_endpoints.hmac_secret_encrypted', id: lost },
      ]);
      expect(boxB.decrypt(await hmacOf(db, kept))).toBe('kept');
    } finally {
      await db.close();
    }
  });
});

describe('a start with an encryption key that does not open the stored secrets', () => {
  it('exits 2 naming HOOKRELAY_ENCRYPTION_KEY, and changes no row and no file', async () => {
    const d = await deployment();
    const keyA = newKey();
    // Embedded: the key the first start writes to the data dir. PostgreSQL: the variable.
    const envA = backend() === 'pglite' ? d.env() : d.env({ HOOKRELAY_ENCRYPTION_KEY: keyA });
    const server = await start(envA);
    const secrets = await createSecrets(server);
    expect(await server.stop()).toBe(0);
    const before = await snapshot(d);

    const wrong = await run(['start'], d.env({ HOOKRELAY_ENCRYPTION_KEY: newKey() }));
    expect(wrong.code, wrong.stdout + wrong.stderr).toBe(2);
    expect(wrong.stderr).toMatch(/^hookrelay-server: HOOKRELAY_ENCRYPTION_KEY does not open this database's secrets/);
    expect(wrong.stderr).toContain('Nothing was changed');
    expect(wrong.stdout).not.toContain('listening');
    expect(await snapshot(d)).toEqual(before);
    expect(before.rows.encryption_key_check).toMatch(/check_value/);

    // Two wrong keys: both are named.
    const twoWrong = await run(['start'], d.env({ HOOKRELAY_ENCRYPTION_KEY: newKey(), HOOKRELAY_PREVIOUS_ENCRYPTION_KEY: newKey() }));
    expect(twoWrong.code).toBe(2);
    expect(twoWrong.stderr).toContain('neither HOOKRELAY_ENCRYPTION_KEY nor HOOKRELAY_PREVIOUS_ENCRYPTION_KEY opens');

    if (backend() === 'pglite') {
      // The data dir's key file lost: no new key is made beside secrets sealed under the old one.
      const keyFile = path.join(d.dataDir, 'encryption-key');
      const kept = readFileSync(keyFile, 'utf8');
      rmSync(keyFile);
      const lost = await run(['start'], d.env());
      expect(lost.code).toBe(2);
      expect(lost.stderr).toContain(`${keyFile} is missing`);
      expect(lost.stderr).toContain('HOOKRELAY_ENCRYPTION_KEY');
      expect(existsSync(keyFile)).toBe(false);
      writeFileSync(keyFile, kept, { mode: 0o600 });
      // A wrong key in the file is named by its path.
      writeFileSync(keyFile, `${newKey()}\n`, { mode: 0o600 });
      const wrongFile = await run(['start'], d.env());
      expect(wrongFile.code).toBe(2);
      expect(wrongFile.stderr).toContain(`the encryption key in ${keyFile} (HOOKRELAY_ENCRYPTION_KEY is unset) does not open`);
      writeFileSync(keyFile, kept, { mode: 0o600 });
    }
    expect(await snapshot(d)).toEqual(before);
    // A malformed previous key is a configuration error that does not echo the value.
    const malformed = await run(['start'], { ...envA, HOOKRELAY_PREVIOUS_ENCRYPTION_KEY: 'not-a-key-at-all' });
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain('HOOKRELAY_PREVIOUS_ENCRYPTION_KEY: invalid encryption key');
    expect(malformed.stderr).not.toContain('not-a-key-at-all');

    // The right key and a wrong previous one: the right one opens them.
    const withPrevious = await run(['start'], { ...envA, HOOKRELAY_PREVIOUS_ENCRYPTION_KEY: newKey() });
    expect(withPrevious.code).toBe('listening');
    const again = await start(envA);
    await expectSecretsWork(again, secrets);
    expect(await again.stop()).toBe(0);
  }, 300_000);

  it.runIf(backend() === 'pglite')('of a data dir that lost its key file before storing any secret: starts with a new key', async () => {
    const d = await deployment();
    const keyFile = path.join(d.dataDir, 'encryption-key');
    const first = await start(d.env());
    expect(await first.stop()).toBe(0);
    const lostKey = readFileSync(keyFile, 'utf8');
    rmSync(keyFile);
    const second = await start(d.env());
    const secrets = await createSecrets(second);
    await expectSecretsWork(second, secrets);
    expect(await second.stop()).toBe(0);
    const newKeyText = readFileSync(keyFile, 'utf8');
    expect(newKeyText).not.toBe(lostKey);
    // The check value now names the new key: the lost one no longer opens the database.
    expect((await run(['start'], d.env({ HOOKRELAY_ENCRYPTION_KEY: lostKey.trim() }))).code).toBe(2);
    expect(opensAll(newKeyText.trim(), await sealedValues(d))).toBe(true);
  }, 300_000);

  it('on a database from before key checks: refuses before migrating, by the stored secrets; the right key records the check', async () => {
    const d = await deployment();
    const keyA = newKey();
    const envA = d.env({ HOOKRELAY_ENCRYPTION_KEY: keyA });
    const server = await start(envA);
    const secrets = await createSecrets(server);
    expect(await server.stop()).toBe(0);
    // As the database of an earlier version was: no check table, its migration not applied.
    const db = await d.open();
    try {
      await db.sql`DROP TABLE encryption_key_check`;
      await db.sql`DELETE FROM schema_migrations WHERE name = '011_encryption_key_check'`;
    } finally {
      await db.close();
    }
    const before = await snapshot(d);
    expect(before.rows.encryption_key_check).toBeUndefined();

    const wrong = await run(['start'], d.env({ HOOKRELAY_ENCRYPTION_KEY: newKey() }));
    expect(wrong.code, wrong.stdout + wrong.stderr).toBe(2);
    expect(wrong.stderr).toContain('HOOKRELAY_ENCRYPTION_KEY does not open this database\'s secrets');
    expect(await snapshot(d)).toEqual(before);

    const right = await start(envA);
    await expectSecretsWork(right, secrets);
    expect(await right.stop()).toBe(0);
    const after = await snapshot(d);
    expect(after.rows.schema_migrations).toContain('011_encryption_key_check');
    expect(after.rows.encryption_key_check).toMatch(/check_value/);
    expect((await run(['start'], d.env({ HOOKRELAY_ENCRYPTION_KEY: newKey() }))).code).toBe(2);
  }, 300_000);
});

describe('rotating the encryption key', () => {
  it.runIf(backend() === 'postgres')(
    'with HOOKRELAY_PREVIOUS_ENCRYPTION_KEY: processes start on both keys, the command seals every secret under the new one, which then works alone',
    async () => {
      const d = await deployment();
      const keyA = newKey();
      const keyB = newKey();
      const first = await start(d.env({ HOOKRELAY_ENCRYPTION_KEY: keyA }));
      const secrets = await createSecrets(first);
      expect(await first.stop()).toBe(0);
      const sealedA = await sealedValues(d);
      expect(sealedA).toHaveLength(3);
      expect(opensAll(keyA, sealedA)).toBe(true);

      // The new key with the old one beside it: the secrets still open, and the server says what is left to do.
      const rolling = await start(d.env({ HOOKRELAY_ENCRYPTION_KEY: keyB, HOOKRELAY_PREVIOUS_ENCRYPTION_KEY: keyA }));
      await expectSecretsWork(rolling, secrets);
      expect(rolling.stdout()).toContain('run `hookrelay-server encryption rotate-key`');
      expect(await rolling.stop()).toBe(0);
      // Without the previous key, the command refuses and leaves every secret as it was.
      const noPrevious = await run(['encryption', 'rotate-key', '--json'], d.env({ HOOKRELAY_ENCRYPTION_KEY: keyB }));
      expect(noPrevious.code).toBe(1);
      expect(noPrevious.stderr).toContain('HOOKRELAY_PREVIOUS_ENCRYPTION_KEY is unset');
      expect(await sealedValues(d)).toEqual(sealedA);

      const rotated = await run(['encryption', 'rotate-key', '--json'], d.env({ HOOKRELAY_ENCRYPTION_KEY: keyB, HOOKRELAY_PREVIOUS_ENCRYPTION_KEY: keyA }));
      expect(rotated.code, rotated.stderr).toBe(0);
      expect(JSON.parse(rotated.stdout)).toEqual({
        resealed: 3,
        secrets: 3,
        columns: {
          'signing_keys.secret_encrypted': 1,
          'inbound_endpoints.secret_token_encrypted': 1,
          'inbound_endpoints.hmac_secret_encrypted': 1,
        },
        key_file: null,
      });
      const sealedB = await sealedValues(d);
      expect(sealedB).toHaveLength(3);
      expect(opensAll(keyB, sealedB)).toBe(true);
      expect(sealedB.some((token) => opensAll(keyA, [token]))).toBe(false);

      const alone = await start(d.env({ HOOKRELAY_ENCRYPTION_KEY: keyB }));
      await expectSecretsWork(alone, secrets);
      expect(alone.stdout()).not.toContain('rotate-key');
      expect(await alone.stop()).toBe(0);
      // The old key alone no longer opens the database.
      const old = await run(['start'], d.env({ HOOKRELAY_ENCRYPTION_KEY: keyA }));
      expect(old.code).toBe(2);
      // Run again, it finds nothing left to seal.
      const again = await run(['encryption', 'rotate-key', '--json'], d.env({ HOOKRELAY_ENCRYPTION_KEY: keyB, HOOKRELAY_PREVIOUS_ENCRYPTION_KEY: keyA }));
      expect(again.code, again.stderr).toBe(0);
      expect(JSON.parse(again.stdout)).toMatchObject({ resealed: 0, secrets: 3 });
      expect(await sealedValues(d)).toEqual(sealedB);
    },
    300_000,
  );

  it.runIf(backend() === 'pglite')(
    'of the data dir\'s key file: the command writes a new key and seals every secret under it; one cut short is finished by running it again',
    async () => {
      const d = await deployment();
      const keyFile = path.join(d.dataDir, 'encryption-key');
      const previousFile = path.join(d.dataDir, 'encryption-key.previous');
      const first = await start(d.env());
      const secrets = await createSecrets(first);
      expect(await first.stop()).toBe(0);
      const keyA = readFileSync(keyFile, 'utf8').trim();
      const sealedA = await sealedValues(d);
      expect(sealedA).toHaveLength(3);
      expect(opensAll(keyA, sealedA)).toBe(true);

      const rotated = await run(['encryption', 'rotate-key', '--json'], d.env());
      expect(rotated.code, rotated.stderr).toBe(0);
      expect(JSON.parse(rotated.stdout)).toMatchObject({ resealed: 3, secrets: 3, key_file: keyFile });
      const keyB = readFileSync(keyFile, 'utf8').trim();
      expect(keyB).toMatch(/^[0-9a-f]{64}$/);
      expect(keyB).not.toBe(keyA);
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);
      expect(existsSync(previousFile)).toBe(false);
      expect(readdirSync(d.dataDir).sort()).toEqual(['encryption-key', 'pgdata']);
      const sealedB = await sealedValues(d);
      expect(opensAll(keyB, sealedB)).toBe(true);
      expect(sealedB.some((token) => opensAll(keyA, [token]))).toBe(false);

      const afterRotation = await start(d.env());
      await expectSecretsWork(afterRotation, secrets);
      expect(await afterRotation.stop()).toBe(0);
      expect((await run(['start'], d.env({ HOOKRELAY_ENCRYPTION_KEY: keyA }))).code).toBe(2);

      // A rotation cut short after writing its files: the new key in the key file, the old one beside it.
      const keyC = newKey();
      writeFileSync(previousFile, `${keyB}\n`, { mode: 0o600 });
      writeFileSync(keyFile, `${keyC}\n`, { mode: 0o600 });
      const midway = await start(d.env());
      await expectSecretsWork(midway, secrets);
      expect(midway.stdout()).toContain(`sealed under ${previousFile}`);
      expect(await midway.stop()).toBe(0);
      const finished = await run(['encryption', 'rotate-key', '--json'], d.env());
      expect(finished.code, finished.stderr).toBe(0);
      expect(JSON.parse(finished.stdout)).toMatchObject({ resealed: 3, secrets: 3 });
      expect(readFileSync(keyFile, 'utf8').trim()).toBe(keyC);
      expect(existsSync(previousFile)).toBe(false);
      expect(opensAll(keyC, await sealedValues(d))).toBe(true);

      const alone = await start(d.env());
      await expectSecretsWork(alone, secrets);
      expect(await alone.stop()).toBe(0);
    },
    300_000,
  );
});

describe('a rotation that did not finish', () => {
  /** The start refusals of keys that open only one side of an unfinished rotation. */
  const HALF = /opens only part of this database's secrets: `hookrelay-server encryption rotate-key` began sealing them again under a new key and did not finish/;

  it('one that stopped at secrets no key opens: a start with the old key alone, or the new one alone, refuses; both keys start, and finish it', async () => {
    const d = await deployment();
    const keyA = newKey();
    const keyB = newKey();
    const embedded = backend() === 'pglite';
    // Embedded: the data dir's key file, rotated by the command. PostgreSQL: the variables.
    const envA = embedded ? d.env() : d.env({ HOOKRELAY_ENCRYPTION_KEY: keyA });
    const first = await start(envA);
    const secrets = await createSecrets(first);
    const stray = await api(first, 'POST', '/v1/inbound-endpoints', { name: 'stray', mode: 'cli', verify_hmac: true, hmac_scheme: 'github', hmac_secret: 'stray-secret' });
    expect(stray.status).toBe(201);
    expect(await first.stop()).toBe(0);
    const oldKey = embedded ? readFileSync(path.join(d.dataDir, 'encryption-key'), 'utf8').trim() : keyA;
    // One secret sealed under some third key: the command seals the others, then stops short.
    const db = await d.open();
    try {
      const third = new SecretBox(Buffer.from(newKey(), 'hex')).encrypt('stray-secret');
      await db.sql`UPDATE inbound_endpoints SET hmac_secret_encrypted = ${third} WHERE id = ${stray.json.data.id}`;
    } finally {
      await db.close();
    }
    const rotation = embedded ? d.env() : d.env({ HOOKRELAY_ENCRYPTION_KEY: keyB, HOOKRELAY_PREVIOUS_ENCRYPTION_KEY: keyA });
    const stopped = await run(['encryption', 'rotate-key'], rotation);
    expect(stopped.code, stopped.stderr).toBe(1);
    expect(stopped.stderr).toContain('1 of 5 secrets open with neither key');
    const newKeyValue = embedded ? readFileSync(path.join(d.dataDir, 'encryption-key'), 'utf8').trim() : keyB;
    expect(opensAll(newKeyValue, (await sealedValues(d)).slice(0, 1))).toBe(true);
    const before = await snapshot(d);

    // The old key alone opens the check value, but not the secrets the command moved.
    const oldAlone = await run(['start'], d.env({ HOOKRELAY_ENCRYPTION_KEY: oldKey }));
    expect(oldAlone.code, oldAlone.stdout + oldAlone.stderr).toBe(2);
    expect(oldAlone.stderr).toMatch(HALF);
    expect(oldAlone.stderr).toMatch(/^hookrelay-server: HOOKRELAY_ENCRYPTION_KEY opens only part/);
    expect(oldAlone.stderr).toContain('Nothing was changed.');
    const newAlone = await run(['start'], d.env({ HOOKRELAY_ENCRYPTION_KEY: newKeyValue }));
    expect(newAlone.code).toBe(2);
    expect(newAlone.stderr).toContain('HOOKRELAY_ENCRYPTION_KEY does not open this database\'s secrets');
    expect(await snapshot(d)).toEqual(before);

    // Both keys: every secret works; with the stray one put right, the command finishes and the new key works alone.
    const both = await start(rotation);
    await expectSecretsWork(both, secrets);
    expect(await both.stop()).toBe(0);
    const fix = await d.open();
    try {
      await fix.sql`UPDATE inbound_endpoints SET hmac_secret_encrypted = ${new SecretBox(Buffer.from(oldKey, 'hex')).encrypt('stray-secret')} WHERE id = ${stray.json.data.id}`;
    } finally {
      await fix.close();
    }
    const finished = await run(['encryption', 'rotate-key', '--json'], rotation);
    expect(finished.code, finished.stderr).toBe(0);
    const alone = await start(embedded ? d.env() : d.env({ HOOKRELAY_ENCRYPTION_KEY: keyB }));
    await expectSecretsWork(alone, secrets);
    expect(await alone.stop()).toBe(0);
    expect((await run(['start'], d.env({ HOOKRELAY_ENCRYPTION_KEY: oldKey }))).code).toBe(2);
  }, 300_000);

  it.runIf(backend() === 'postgres')('one killed with the signing keys sealed again and the inbound secrets not yet: the old key alone refuses to start', async () => {
    const d = await deployment();
    const keyA = newKey();
    const keyB = newKey();
    const first = await start(d.env({ HOOKRELAY_ENCRYPTION_KEY: keyA }));
    const secrets = await createSecrets(first);
    expect(await first.stop()).toBe(0);

    // The inbound endpoint's row held locked: the command seals the signing key again, then waits on it.
    const holder = openPostgres({ url: d.databaseUrl!, poolSize: 1 });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const held = holder.sql.begin(async (tx) => {
      await tx`SELECT id FROM inbound_endpoints FOR UPDATE`;
      locked();
      await released;
    });
    await isLocked;
    const rotation = d.env({ HOOKRELAY_ENCRYPTION_KEY: keyB, HOOKRELAY_PREVIOUS_ENCRYPTION_KEY: keyA });
    const child = spawn(process.execPath, [SERVER_MAIN, 'encryption', 'rotate-key'], { env: { PATH: process.env.PATH ?? '', ...rotation }, stdio: 'ignore' });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      const deadline = Date.now() + 30_000;
      while (!opensAll(keyB, (await sealedValues(d)).slice(0, 1))) {
        if (Date.now() > deadline) throw new Error('the signing key was not sealed again within 30 s');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      child.kill('SIGKILL');
      await exited;
      release();
      await held;
      await holder.close();
    }
    const sealed = await sealedValues(d);
    expect(opensAll(keyB, sealed.slice(0, 1))).toBe(true);
    expect(opensAll(keyA, sealed.slice(1))).toBe(true);

    const oldAlone = await run(['start'], d.env({ HOOKRELAY_ENCRYPTION_KEY: keyA }));
    expect(oldAlone.code, oldAlone.stdout + oldAlone.stderr).toBe(2);
    expect(oldAlone.stderr).toMatch(HALF);
    // Both keys serve every secret; running the command again finishes, and the new key serves alone.
    const both = await start(rotation);
    await expectSecretsWork(both, secrets);
    expect(await both.stop()).toBe(0);
    const finished = await run(['encryption', 'rotate-key', '--json'], rotation);
    expect(finished.code, finished.stderr).toBe(0);
    expect(JSON.parse(finished.stdout)).toMatchObject({ resealed: 2, secrets: 3 });
    const alone = await start(d.env({ HOOKRELAY_ENCRYPTION_KEY: keyB }));
    await expectSecretsWork(alone, secrets);
    expect(await alone.stop()).toBe(0);
  }, 300_000);
});
