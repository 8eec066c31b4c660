import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { expectSuccess } from './helpers/expect-cli.js';

/**
 * Shell completion (@oclif/plugin-autocomplete) on the built CLI: no server needed. The plugin
 * writes its completion functions to the cache dir, pointed at a throwaway one here.
 */

let cacheHome: string;

beforeAll(async () => {
  cacheHome = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-completion-'));
});

afterAll(async () => {
  await rm(cacheHome, { recursive: true, force: true });
});

describe('hookrelay autocomplete', () => {
  it('--help explains the command', async () => {
    const result = await runCli(['autocomplete', '--help']);
    expectSuccess(result);
    expect(result.stdout).toMatch(/hookrelay autocomplete \[SHELL\]/u);
    expect(result.stdout).toMatch(/zsh\|bash\|powershell/u);
  });

  it('bash and zsh: prints the setup and builds completions of every command and its flags', async () => {
    const env = { XDG_CACHE_HOME: cacheHome, HOME: cacheHome };
    const bash = await runCli(['autocomplete', 'bash'], { env });
    expectSuccess(bash);
    expect(bash.stdout).toContain('hookrelay autocomplete script bash');
    const functions = await readFile(join(cacheHome, 'hookrelay', 'autocomplete', 'functions', 'bash', 'hookrelay.bash'), 'utf8');
    expect(functions).toMatch(/^pull:events:delete-all .*--force/mu);
    expect(functions).toMatch(/^messages:send .*--endpoint .*--idempotency-key/mu);
    expect(functions).toMatch(/^logs .*--follow/mu);

    const zsh = await runCli(['autocomplete', 'zsh'], { env });
    expectSuccess(zsh);
    const script = await runCli(['autocomplete', 'script', 'zsh'], { env });
    expectSuccess(script);
    expect(script.stdout).toContain('HOOKRELAY_AC_ZSH_SETUP_PATH');
  });

  it('an unknown shell is a usage error (exit 2)', async () => {
    const result = await runCli(['autocomplete', 'fish']);
    expect(result.code).toBe(2);
  });
});
