// Which approvals batch triage groups (docs/slack.md#batch-triage), and the summary card it draws.

import { describe, expect, it } from 'vitest';
import { renderBatchSummary } from '../../../src/cards/renderBatchSummary.js';
import {
  BATCH_GROUP_ID_MAX_CHARS,
  batchGroupOf,
  batchMemberOf,
  batchShapeOf,
} from '../../../src/domain/batchGroup.js';
import { fileRecord, shellRecord } from '../../support/cardFixtures.js';

describe('batchGroupOf', () => {
  it('groups alike requests of one channel whatever their session, and tells apart what differs', () => {
    const a = batchGroupOf(fileRecord({ approvalId: 'a', sessionId: 's1', route: 'builds' }), 1)!;
    const b = batchGroupOf(fileRecord({ approvalId: 'b', sessionId: 's2', route: 'builds' }), 1)!;
    expect(a.groupId).toBe(b.groupId);
    expect(a.groupId.startsWith('C0APPROVALS:')).toBe(true);
    expect(a.shared).toEqual({
      route: 'builds',
      tool: 'write_file',
      capabilities: ['file-write:/home/me/src/proj/Cargo.toml'],
      sandboxMode: 'default',
    });
    const differs = [
      fileRecord({ route: 'other' }),
      fileRecord({ route: 'builds', tool: 'edit_file' }),
      fileRecord({ route: 'builds', sandboxMode: 'workspace-write' }),
      fileRecord({ route: 'builds', slack: { channel: 'C0OTHER', ts: '1.2' } }),
      fileRecord({ route: 'builds', subject: { kind: 'fileAccess', path: '/etc/x', access: 'write' } }),
    ];
    for (const record of differs) expect(batchGroupOf(record, 1)?.groupId).not.toBe(a.groupId);
  });

  it('alike requests share one worked-out shape, which nobody can change', () => {
    const a = batchGroupOf(fileRecord({ approvalId: 'a', route: 'builds' }), 1)!;
    const b = batchGroupOf(fileRecord({ approvalId: 'b', route: 'builds' }), 1)!;
    expect(b.shared).toBe(a.shared);
    expect(b.groupId).toBe(a.groupId);
    expect(Object.isFrozen(a.shared)).toBe(true);
  });

  it('never groups what must be decided one by one', () => {
    const never = [
      ['a quorum above 1', fileRecord(), 2],
      ['a risk rule matched', fileRecord({ risks: [{ name: 'secrets', warning: 'Touches secrets' }] }), 1],
      ['a protected write', fileRecord({ protectedWrite: true }), 1],
      ['an unknown kind', fileRecord({ subject: { kind: 'browserSession' } }), 1],
      ['masked secrets', fileRecord({ intake: { maskedSecrets: 1, truncated: false, parts: {} } }), 1],
      ['not posted yet', fileRecord({ slack: { channel: 'C0APPROVALS' } }), 1],
      ['being decided', fileRecord({ phase: 'deciding' }), 1],
      ['under review', fileRecord({ phase: 'reviewing' }), 1],
      ['no approve-once choice', fileRecord({ availableChoices: [fileRecord().availableChoices[2]!] }), 1],
    ] as const;
    for (const [why, record, quorum] of never) expect(batchGroupOf(record, quorum), why).toBeUndefined();
  });

  it('never makes a group id longer than BATCH_GROUP_ID_MAX_CHARS: a longer channel id is decided card by card', () => {
    // Slack's channel ids are about a dozen characters; 64 is as long as one that is grouped gets.
    const longest = fileRecord({ slack: { channel: `C${'X'.repeat(63)}`, ts: '1.1' } });
    expect(batchGroupOf(longest, 1)!.groupId).toHaveLength(BATCH_GROUP_ID_MAX_CHARS);
    const longer = fileRecord({ slack: { channel: `C${'X'.repeat(64)}`, ts: '1.1' } });
    expect(batchGroupOf(longer, 1)).toBeUndefined();
    expect(batchShapeOf(longer)).toBeUndefined();
  });

  it('groups a shell request by the stage asked now', () => {
    const first = batchGroupOf(shellRecord(1), 1)!;
    const second = batchGroupOf(shellRecord(2), 1)!;
    expect(first.shared.capabilities).toEqual(['exec:npm test']);
    expect(second.groupId).not.toBe(first.groupId);
    expect(batchMemberOf(shellRecord(2)).sourceIndex).toBe(1);
  });
});

describe('renderBatchSummary', () => {
  it('escapes agent text, links each card, and carries the members as drawn on its buttons', () => {
    const record = fileRecord({
      sessionTitle: '<!channel> *urgent* <https://evil.example|docs>',
      subject: { kind: 'fileAccess', path: '/srv/<b>&x', access: 'write' },
    });
    const group = batchGroupOf(record, 1)!;
    const member = batchMemberOf(record);
    const { blocks, text } = renderBatchSummary(
      {
        groupId: group.groupId,
        channel: group.channel,
        shared: group.shared,
        members: [member, member],
        total: 2,
      },
      new Map([[member.approvalId, 'https://test.slack.com/archives/C0APPROVALS/p1']]),
    );
    const json = JSON.stringify(blocks);
    expect(text).toBe('2 alike requests are waiting');
    expect(json).not.toContain('<!channel>');
    expect(json).not.toContain('<https://evil');
    expect(json).not.toContain('<b>');
    expect(json).toContain('&lt;b&gt;&amp;x');
    expect(json).toContain('<https://test.slack.com/archives/C0APPROVALS/p1|1. ');
    const actions = blocks.find((b) => b.type === 'actions') as { elements: Array<{ value: string }> };
    // As drawn, read raw: the parser drops a member listed twice, the renderer lists what it is given.
    expect(JSON.parse(actions.elements[0]!.value)).toEqual({
      g: group.groupId,
      m: [
        [member.approvalId, 0],
        [member.approvalId, 0],
      ],
    });
  });
});
