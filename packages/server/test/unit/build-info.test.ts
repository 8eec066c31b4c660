import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

/** The build step that records the commit /healthz and hookrelay_build_info report. */
const SCRIPT = fileURLToPath(new URL('../../scripts/write-build-info.mjs', import.meta.url));
const out = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-build-info-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

const written = (): unknown => JSON.parse(readFileSync(path.join(out, 'build-info.json'), 'utf8'));

describe('scripts/write-build-info.mjs', () => {
  it('records the checkout commit', () => {
    execFileSync(process.execPath, [SCRIPT, out], { timeout: 30_000 });
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: path.dirname(SCRIPT), encoding: 'utf8' }).trim();
    expect(written()).toEqual({ commit: head });
  });

  it('says unknown where there is no git', () => {
    execFileSync(process.execPath, [SCRIPT, out], { timeout: 30_000, env: { PATH: out } });
    expect(written()).toEqual({ commit: 'unknown' });
  });
});
