import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { configVariables, parseConfig } from '../../src/config.js';
import { SERVER_MAIN } from '../helpers/process.js';

/**
 * `hookrelay-server --help` lists every configuration variable, read here from config.ts's own text
 * (not from the list the help is made from), with its flag, a description and its default.
 */
const CONFIG_SOURCE = readFileSync(fileURLToPath(new URL('../../src/config.ts', import.meta.url)), 'utf8');

function schemaVariables(): string[] {
  const start = CONFIG_SOURCE.indexOf('const EnvSchema = z.object({');
  const end = CONFIG_SOURCE.indexOf('\n});\n', start);
  expect(start).toBeGreaterThan(-1);
  return [...CONFIG_SOURCE.slice(start, end).matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm)].map((match) => match[1]!);
}

const help = execFileSync(process.execPath, [SERVER_MAIN, '--help'], { encoding: 'utf8', timeout: 30_000 });

/** The help's entry of one variable: its line and the description line under it. */
function entry(name: string): { line: string; description: string } | undefined {
  const lines = help.split('\n');
  const at = lines.findIndex((line) => line.trimStart().startsWith(`${name} `));
  if (at === -1) return undefined;
  return { line: lines[at]!, description: lines[at + 1]?.trim() ?? '' };
}

describe('hookrelay-server --help', () => {
  const names = schemaVariables();

  it('reads the schema (sanity: the variables the server has long had are found)', () => {
    expect(names).toEqual(expect.arrayContaining(['HOOKRELAY_HOST', 'HOOKRELAY_PORT', 'DATABASE_URL', 'HOOKRELAY_API_RATE_BURST', 'AWS_SESSION_TOKEN']));
    expect(names.length).toBeGreaterThanOrEqual(36);
  });

  it.each(schemaVariables())('lists %s with its flag and a description', (name) => {
    const found = entry(name);
    expect(found, `${name} is not in --help:\n${help}`).toBeDefined();
    const flag = name.startsWith('AWS_') || name.startsWith('OTEL_') ? '(environment only)' : `--${name.replace(/^HOOKRELAY_/, '').toLowerCase().replaceAll('_', '-')}`;
    expect(found!.line).toContain(flag);
    expect(found!.description.length).toBeGreaterThan(10);
  });

  it('its examples keep the encryption key: made once into a file, read at each start (a new key per start would lock out every secret)', () => {
    const examples = help.slice(help.indexOf('Examples:'));
    expect(examples).toContain('openssl rand -hex 32 > /etc/hookrelay/encryption-key');
    expect(examples).toContain('HOOKRELAY_ENCRYPTION_KEY=$(cat /etc/hookrelay/encryption-key) hookrelay-server start');
    const readme = readFileSync(fileURLToPath(new URL('../../../../README.md', import.meta.url)), 'utf8');
    for (const [name, text] of [['--help', examples], ['README.md', readme]] as const) {
      expect(text, name).not.toMatch(/HOOKRELAY_ENCRYPTION_KEY=\$\(openssl/);
    }
  });

  it('shows defaults that parse to what an unset variable gives', () => {
    const base = parseConfig({});
    const described = ['HOOKRELAY_DATA_DIR', 'HOOKRELAY_PUBLIC_URL', 'HOOKRELAY_BOOTSTRAP_API_KEY', 'HOOKRELAY_ENCRYPTION_KEY', 'HOOKRELAY_METRICS_TOKEN', 'HOOKRELAY_API_RATE_BURST', 'AWS_REGION', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'HOOKRELAY_INGEST_MAX_INFLIGHT_BYTES_PER_SOURCE', 'HOOKRELAY_MESSAGE_RETENTION_BATCH_SIZE', 'HOOKRELAY_BULK_CHUNK_SIZE', 'HOOKRELAY_PORTAL_FRAME_ANCESTORS'];
    for (const variable of configVariables()) {
      if (variable.default === undefined || described.includes(variable.name)) continue;
      expect(entry(variable.name)!.description, variable.name).toContain(`(default: ${variable.default})`);
      expect(parseConfig({ [variable.name]: variable.default }), variable.name).toEqual(base);
    }
    expect(entry('HOOKRELAY_PORT')!.description).toContain('(default: 8787)');
    expect(entry('HOOKRELAY_LOG_LEVEL')!.description).toContain('(default: info)');
  });

  it('takes every listed flag, and a flag wins over its variable', () => {
    const refused = (args: string[]) => {
      try {
        execFileSync(process.execPath, [SERVER_MAIN, ...args], { encoding: 'utf8', timeout: 30_000, stdio: 'pipe', env: { PATH: process.env.PATH ?? '', HOOKRELAY_PORT: '1' } });
        return '';
      } catch (error) {
        return String((error as { stderr?: string }).stderr);
      }
    };
    // A bad value given by flag is refused as a configuration error naming the variable: the flag was read.
    expect(refused(['migrate', '--port', 'x'])).toContain('HOOKRELAY_PORT must be a port number');
    expect(refused(['migrate', '--delivery-lease-seconds', '5'])).toContain('HOOKRELAY_DELIVERY_LEASE_SECONDS must be at least 20');
    expect(refused(['migrate', '--delivery-max-bytes', '0'])).toContain('HOOKRELAY_DELIVERY_MAX_BYTES must be positive');
    expect(refused(['migrate', '--log-level', 'loud'])).toContain('HOOKRELAY_LOG_LEVEL');
  });
});
