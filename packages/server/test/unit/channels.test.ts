import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CHANNELS, DELIVERIES_CHANNEL, readReplayNotice, replayNotice, replayNotices } from '../../src/db/channels.js';

const serverDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function files(dir: string, extension: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(extension))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

describe('NOTIFY channels', () => {
  it('every channel the stored SQL notifies on is one of db/channels.ts', () => {
    const named = new Map<string, string[]>();
    for (const file of [...files(path.join(serverDir, 'migrations'), '.sql'), ...files(path.join(serverDir, 'sql'), '.sql')]) {
      const text = readFileSync(file, 'utf8').replace(/--.*$/gm, '');
      for (const match of text.matchAll(/pg_notify\(\s*'([^']*)'|\bNOTIFY\s+([a-z_][a-z0-9_]*)/gi)) {
        const channel = match[1] ?? match[2]!;
        named.set(channel, [...(named.get(channel) ?? []), path.relative(serverDir, file)]);
      }
    }
    // The delivery triggers and the ingest functions wake the workers in SQL.
    expect(named.has(DELIVERIES_CHANNEL)).toBe(true);
    expect([...named.keys()].filter((channel) => !CHANNELS.includes(channel))).toEqual([]);
  });

  it('the TypeScript names a channel only through db/channels.ts', () => {
    const elsewhere = files(path.join(serverDir, 'src'), '.ts')
      .filter((file) => path.relative(serverDir, file) !== path.join('src', 'db', 'channels.ts'))
      .filter((file) => {
        const text = readFileSync(file, 'utf8');
        return CHANNELS.some((channel) => text.includes(`'${channel}'`) || text.includes(`"${channel}"`));
      })
      .map((file) => path.relative(serverDir, file));
    expect(elsewhere).toEqual([]);
  });

  it('the names are distinct', () => {
    expect(new Set(CHANNELS).size).toBe(CHANNELS.length);
  });
});

describe('replay notices', () => {
  const endpoint = '01900000-0000-7000-8000-0000000000e1';
  const ids = Array.from({ length: 250 }, (_, i) => `01900000-0000-7000-8000-${String(i).padStart(12, '0')}`);

  it("carry a bulk replay's ids in order, a hundred to a notice, each well under the payload limit", () => {
    const notices = replayNotices(endpoint, ids);
    expect(notices.map((n) => readReplayNotice(n)!.messageIds.length)).toEqual([100, 100, 50]);
    expect(notices.flatMap((n) => readReplayNotice(n)!.messageIds)).toEqual(ids);
    expect(notices.every((n) => readReplayNotice(n)!.endpointId === endpoint && Buffer.byteLength(n) < 8000)).toBe(true);
    expect(replayNotices(endpoint, [])).toEqual([]);
  });

  it("read the single replay's notice as one id, and refuse one without a message", () => {
    expect(readReplayNotice(replayNotice(endpoint, ids[0]!))).toEqual({ endpointId: endpoint, messageIds: [ids[0]] });
    expect(readReplayNotice(endpoint)).toBeUndefined();
    expect(readReplayNotice(`${endpoint}:`)).toBeUndefined();
    expect(readReplayNotice(`:${ids[0]}`)).toBeUndefined();
  });
});
