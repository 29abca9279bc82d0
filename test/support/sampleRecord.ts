import type { ApprovalRecord } from '../../src/domain/record.js';

/** A pending file-write approval of host `default`, as the store holds it; tests override fields. */
export function sampleRecord(approvalId: string, overrides: Partial<ApprovalRecord> = {}): ApprovalRecord {
  return {
    approvalId,
    hostId: 'default',
    incarnation: 'inc-1',
    sessionId: 's-1',
    caller: 'session:s-1',
    tool: 'write_file',
    rawArgs: '{}',
    subject: { kind: 'fileAccess', path: '/srv/app.ts', access: 'write' },
    requiredCapabilities: ['file-write:/srv/app.ts'],
    sandboxMode: 'default',
    protectedWrite: false,
    judgeEscalated: false,
    currentRequirementId: { approvalId, sourceIndex: 0 },
    availableChoices: [{ choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' }],
    phase: 'pending',
    slack: { channel: 'C1' },
    openedAt: '2026-11-30T10:00:00.000Z',
    updatedAt: '2026-11-30T10:00:00.000Z',
    version: 1,
    ...overrides,
  };
}
