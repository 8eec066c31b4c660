import { describe, expect, it } from 'vitest';
import { DEFAULT_PGLITE_SETTINGS, parseConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';

describe('HOOKRELAY_PGLITE_OPTIONS', () => {
  it('unset: the measured defaults, WebAssembly on the baseline compiler', () => {
    const config = parseConfig({});
    expect(config.pgliteSettings).toEqual(DEFAULT_PGLITE_SETTINGS);
    expect(config.pgliteSettings).toEqual({ shared_buffers: '16MB', max_connections: '2', autovacuum_worker_slots: '1', max_wal_size: '128MB', min_wal_size: '32MB' });
    expect(config.pgliteWasmTier).toBe('baseline');
  });

  it('adds PostgreSQL settings and wins over the defaults name by name, separated by spaces or commas', () => {
    const config = parseConfig({ HOOKRELAY_PGLITE_OPTIONS: 'shared_buffers=128MB, work_mem=2MB  max_wal_size=64MB,wasm_tier=optimizing' });
    expect(config.pgliteSettings).toEqual({ ...DEFAULT_PGLITE_SETTINGS, shared_buffers: '128MB', work_mem: '2MB', max_wal_size: '64MB' });
    expect(config.pgliteWasmTier).toBe('optimizing');
    expect(parseConfig({ HOOKRELAY_PGLITE_OPTIONS: '' }).pgliteSettings).toEqual(DEFAULT_PGLITE_SETTINGS);
  });

  it.each([
    ['shared_buffers', 'name=value'],
    ['shared_buffers=', 'name=value'],
    ["shared_buffers='16MB'", 'name=value'],
    ['Shared_Buffers=16MB', 'name=value'],
    ['shared_buffers=16MB;DROP', 'name=value'],
    ['wasm_tier=fast', 'wasm_tier must be baseline or optimizing'],
  ])('refuses %s', (value, message) => {
    expect(() => parseConfig({ HOOKRELAY_PGLITE_OPTIONS: value })).toThrow(ConfigError);
    expect(() => parseConfig({ HOOKRELAY_PGLITE_OPTIONS: value })).toThrow(message);
  });
});
