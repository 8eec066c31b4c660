import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';

describe('message retention settings', () => {
  it('default to 30 days and batches of 200 on both databases; an empty variable is unset', () => {
    const postgres = { DATABASE_URL: 'postgres://hookrelay@127.0.0.1/hookrelay' };
    expect([parseConfig(postgres).messageRetentionDays, parseConfig(postgres).messageRetentionBatchSize]).toEqual([30, 200]);
    expect([parseConfig({}).messageRetentionDays, parseConfig({}).messageRetentionBatchSize]).toEqual([30, 200]);
    const empty = parseConfig({ ...postgres, HOOKRELAY_MESSAGE_RETENTION_DAYS: '', HOOKRELAY_MESSAGE_RETENTION_BATCH_SIZE: '' });
    expect([empty.messageRetentionDays, empty.messageRetentionBatchSize]).toEqual([30, 200]);
    expect(parseConfig({ HOOKRELAY_MESSAGE_RETENTION_BATCH_SIZE: '50' }).messageRetentionBatchSize).toBe(50);
  });

  it('take 0 (forever) to 3650 days, and a batch of 1 to 10,000', () => {
    expect(parseConfig({ HOOKRELAY_MESSAGE_RETENTION_DAYS: '0' }).messageRetentionDays).toBe(0);
    expect(parseConfig({ HOOKRELAY_MESSAGE_RETENTION_DAYS: '3650' }).messageRetentionDays).toBe(3650);
    expect(parseConfig({ HOOKRELAY_MESSAGE_RETENTION_BATCH_SIZE: '1' }).messageRetentionBatchSize).toBe(1);
    expect(parseConfig({ HOOKRELAY_MESSAGE_RETENTION_BATCH_SIZE: '10000' }).messageRetentionBatchSize).toBe(10_000);
  });

  it.each([
    ['HOOKRELAY_MESSAGE_RETENTION_DAYS', '-1', 'must be 0 or more'],
    ['HOOKRELAY_MESSAGE_RETENTION_DAYS', '3651', 'must be at most 3650'],
    ['HOOKRELAY_MESSAGE_RETENTION_DAYS', '7.5', 'must be an integer'],
    ['HOOKRELAY_MESSAGE_RETENTION_DAYS', 'month', 'must be an integer'],
    ['HOOKRELAY_MESSAGE_RETENTION_BATCH_SIZE', '0', 'must be positive'],
    ['HOOKRELAY_MESSAGE_RETENTION_BATCH_SIZE', '10001', 'must be at most 10000'],
  ])('refuse %s=%s, naming the variable', (name, value, problem) => {
    expect(() => parseConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => parseConfig({ [name]: value })).toThrow(`${name} ${problem}`);
  });
});
