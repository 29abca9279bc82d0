// A grant's row (src/store/grantRows.ts): what the compact layout stores of a grant, and reads back.

import { describe, expect, it } from 'vitest';
import {
  grantOf,
  listingIdOf,
  newRow,
  packRows,
  parseRows,
  ROW,
  rowIsLive,
  streamIdOf,
} from '../../../src/store/grantRows.js';

const T0 = Date.parse('2026-12-01T10:00:00.000Z');
const HOUR = 3_600_000;

const byUses = newRow({
  suffix: '0123456789ab',
  caller: 'session:s-1',
  tool: 'shell',
  sandboxMode: 'workspace-write',
  route: 'deploys',
  capabilities: ['exec:git push', 'file-write:/srv/a "b"/ü.ts'],
  holder: 'bot',
  grantedBy: 'U0ALICE',
  approvalId: '0193a4b2-7c1d-7e2f-8a9b-0c1d2e3f4a5b',
  hostId: 'main',
  channel: 'C0DEPLOY',
  createdMs: T0,
  endMs: T0 + HOUR,
  maxUses: 3,
  lasts: { kind: 'uses', uses: 3 },
});

describe('a grant row', () => {
  it('reads back as the grant it was made from', () => {
    const { rows, unreadable } = parseRows(packRows([byUses]));
    expect(unreadable).toBe(0);
    const { grant, end } = grantOf('0123456789', rows[0]!);
    expect(end).toBe(T0 + HOUR);
    expect(grant).toEqual({
      grantId: '0123456789-0123456789ab',
      caller: 'session:s-1',
      tool: 'shell',
      sandboxMode: 'workspace-write',
      route: 'deploys',
      capabilities: ['exec:git push', 'file-write:/srv/a "b"/ü.ts'],
      holder: 'bot',
      grantedBy: 'U0ALICE',
      approvalId: '0193a4b2-7c1d-7e2f-8a9b-0c1d2e3f4a5b',
      hostId: 'main',
      channel: 'C0DEPLOY',
      createdAt: '2026-12-01T10:00:00.000Z',
      expiresAt: '2026-12-01T11:00:00.000Z',
      uses: 0,
      maxUses: 3,
      usesLeft: 3,
      lasts: { kind: 'uses', uses: 3 },
    });
  });

  it('says what it has been through: used, revoked, replaced; a host-held one has no expiry', () => {
    const row = [...byUses] as typeof byUses;
    row[ROW.uses] = 2;
    row[ROW.lastUsedMs] = T0 + 5_000;
    row[ROW.usesLeft] = 1;
    row[ROW.revokedMs] = T0 + 6_000;
    row[ROW.revokedBy] = 'U0BOB';
    row[ROW.replacedBy] = 'ba9876543210';
    expect(grantOf('0123456789', row).grant).toMatchObject({
      uses: 2,
      lastUsedAt: '2026-12-01T10:00:05.000Z',
      usesLeft: 1,
      revokedAt: '2026-12-01T10:00:06.000Z',
      revokedBy: 'U0BOB',
      replacedBy: '0123456789-ba9876543210',
    });
    const held = newRow({ ...rowInput(), holder: 'host', rulePreview: 'allow `ls`', scope: 'session' });
    const { grant } = grantOf('0123456789', held);
    expect(grant).toMatchObject({ holder: 'host', rulePreview: 'allow `ls`', scope: 'session' });
    expect(grant.expiresAt).toBeUndefined();
    expect(grant.maxUses).toBeUndefined();
  });

  it('is live until it ends, is revoked, or spends its last use', () => {
    expect(rowIsLive(byUses, T0 + HOUR - 1)).toBe(true);
    expect(rowIsLive(byUses, T0 + HOUR)).toBe(false);
    const spent = [...byUses] as typeof byUses;
    spent[ROW.usesLeft] = 0;
    expect(rowIsLive(spent, T0)).toBe(false);
    const revoked = [...byUses] as typeof byUses;
    revoked[ROW.revokedMs] = T0;
    expect(rowIsLive(revoked, T0)).toBe(false);
    // A time-bound grant has no uses to spend.
    expect(rowIsLive(newRow(rowInput()), T0)).toBe(true);
  });

  it('leaves out a row this release cannot read, and says how many', () => {
    const { rows, unreadable } = parseRows(packRows([byUses, ['x', 1] as never]));
    expect(rows).toHaveLength(1);
    expect(unreadable).toBe(1);
    expect(parseRows(null)).toEqual({ rows: [], unreadable: 0 });
  });

  it('keeps a listing entry id as its offset from the creation, and gives it back', () => {
    for (const id of [`${T0}-0`, `${T0 + 3}-2`, `${T0 - 5}-0`]) {
      const kept = listingIdOf(id, T0);
      expect(kept.length).toBeLessThanOrEqual(5);
      expect(streamIdOf(kept, T0)).toBe(id);
    }
    expect(streamIdOf('', T0)).toBeUndefined();
  });
});

function rowInput() {
  return {
    suffix: 'h0123456789a',
    caller: 'session:s-1',
    tool: 'shell',
    sandboxMode: 'workspace-write',
    route: 'deploys',
    capabilities: ['exec:ls'],
    holder: 'bot' as const,
    grantedBy: 'U0ALICE',
    approvalId: 'a-1',
    hostId: 'main',
    channel: 'C0DEPLOY',
    createdMs: T0,
    endMs: T0 + HOUR,
  };
}
