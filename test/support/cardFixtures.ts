// Approval records for card tests, with values taken from the recorded round trip
// (msp-transcripts/approval-round-trip: a fileAccess write of Cargo.toml) and the two-stage shell
// example in docs/msp-approvals.md §5.2–5.3.

import type { RenderedMessage } from '../../src/domain/messages.js';
import type { ApprovalRecord, Phase } from '../../src/domain/record.js';
import type { ApprovalChoice, ApprovalSubject } from '../../src/msp/protocol.js';

export const NOW = new Date('2026-08-07T18:45:40.000Z');
export const OPENED_AT = '2026-08-07T18:42:23.100Z';
export const DECIDED_AT = '2026-08-07T18:44:44.000Z';
export const APPROVER = 'U0APPROVER';

const FILE_APPROVAL_ID = '0198f0ac-7777-7000-8000-0000000000e1';
const SHELL_APPROVAL_ID = '01968f2d-2222-7aaa-8bbb-0000000000a1';

export const FILE_CHOICES: ApprovalChoice[] = [
  { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
  {
    choiceId: 'allow_session',
    label: 'Allow for this session',
    decision: 'approvedForSession',
    scope: 'session',
    rulePreview: 'write /home/me/src/proj/Cargo.toml',
  },
  { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once', acceptsFeedback: true },
];

/** The fileAccess approval of the recorded round trip, pending. */
export function fileRecord(overrides: Partial<ApprovalRecord> = {}): ApprovalRecord {
  return {
    approvalId: FILE_APPROVAL_ID,
    hostId: 'local',
    incarnation: 'inc-1',
    sessionId: '0198f0aa-1111-7000-8000-0000000000aa',
    turnId: '018f6a1e-9b3c-7c21-a54a-2f30bd3c9f10',
    itemId: '0198f0ac-4242-7000-8000-000000000042',
    toolCallId: 'call_9f21',
    caller: 'session:0198f0aa-1111-7000-8000-0000000000aa',
    tool: 'write_file',
    rawArgs: '{"path":"Cargo.toml"}',
    subject: {
      kind: 'fileAccess',
      toolName: 'write_file',
      path: '/home/me/src/proj/Cargo.toml',
      access: 'write',
    },
    requiredCapabilities: ['file-write:/home/me/src/proj/Cargo.toml'],
    sandboxMode: 'default',
    protectedWrite: false,
    judgeEscalated: false,
    currentRequirementId: { approvalId: FILE_APPROVAL_ID, sourceIndex: 0 },
    availableChoices: FILE_CHOICES,
    phase: 'pending',
    slack: { channel: 'C0APPROVALS', ts: '1754590943.000100' },
    openedAt: OPENED_AT,
    updatedAt: OPENED_AT,
    version: 3,
    ...overrides,
  };
}

function stage(index: number, argv: string[], kind: string, total = 2) {
  return {
    requirementId: { approvalId: SHELL_APPROVAL_ID, sourceIndex: index },
    position: index + 1,
    totalStages: total,
    argv,
    argvComplete: true,
    resolution: { kind },
  };
}

/** `npm test && git push`, deciding stage 1 (sourceIndex 0) or, after stage 1 was allowed once, stage 2. */
export function shellRecord(atStage: 1 | 2, overrides: Partial<ApprovalRecord> = {}): ApprovalRecord {
  const subject: ApprovalSubject = {
    kind: 'shell',
    command: 'npm test && git push',
    workspaceRoot: '/srv/repo',
    stages: [
      stage(0, ['npm', 'test'], atStage === 1 ? 'unresolved' : 'allowOnce'),
      stage(1, ['git', 'push'], 'unresolved'),
    ],
  };
  const choices: ApprovalChoice[] =
    atStage === 1
      ? [
          { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
          {
            choiceId: 'allow_local_prefix',
            label: 'Always allow in this workspace: npm test ...',
            decision: 'approvedPolicyAmendment',
            scope: 'localPersistent',
            rulePreview: 'Always allow in this workspace: npm test ...',
          },
          { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once', acceptsFeedback: true },
        ]
      : [
          { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
          { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once', acceptsFeedback: true },
        ];
  return fileRecord({
    approvalId: SHELL_APPROVAL_ID,
    sessionId: '01968f2d-0000-7aaa-8bbb-000000000001',
    sessionTitle: 'Fix the flaky test',
    turnId: '01968f2d-1111-7aaa-8bbb-000000000002',
    itemId: '01968f2d-3333-7aaa-8bbb-0000000000c1',
    toolCallId: 'call_abc123',
    caller: 'session:01968f2d-0000-7aaa-8bbb-000000000001',
    tool: 'bash',
    rawArgs: '{"command":"npm test && git push"}',
    subject,
    requiredCapabilities: ['exec:npm test', 'exec:git push'],
    currentRequirementId: { approvalId: SHELL_APPROVAL_ID, sourceIndex: atStage - 1 },
    availableChoices: choices,
    ...overrides,
  });
}

export type Resolver = 'user' | 'policy' | 'llmJudge';

/** The record moved to `phase` with the fields that phase carries. */
export function inPhase(record: ApprovalRecord, phase: Phase, resolvedBy: Resolver = 'user'): ApprovalRecord {
  switch (phase) {
    case 'deciding':
      return {
        ...record,
        phase,
        claim: {
          sourceIndex: record.currentRequirementId.sourceIndex,
          userId: APPROVER,
          choiceId: 'allow_once',
          commandId: '018f6a2a-3333-7abc-8def-00000000d001',
          claimedAt: DECIDED_AT,
        },
      };
    case 'resolved':
      return {
        ...record,
        phase,
        resolution:
          resolvedBy === 'user'
            ? {
                decision: 'approvedForSession',
                resolvedBy: 'user',
                policyResult: 'allow',
                amendment: { durability: 'session', rulePreview: 'write /home/me/src/proj/Cargo.toml' },
                decidedAt: DECIDED_AT,
                slackUserId: APPROVER,
              }
            : resolvedBy === 'policy'
              ? { decision: 'denied', resolvedBy: 'policy', policyResult: 'deny', decidedAt: DECIDED_AT }
              : {
                  decision: 'approvedPolicyAmendment',
                  resolvedBy: 'llmJudge',
                  policyResult: 'allow',
                  amendment: {
                    durability: 'localPersistent',
                    rulePreview: 'Always allow in this workspace: npm test ...',
                  },
                  decidedAt: DECIDED_AT,
                },
      };
    case 'superseded':
      return {
        ...record,
        phase,
        supersededNote: 'Re-asked as approval 0198f0ac-8888 after the host restarted.',
      };
    default:
      return { ...record, phase };
  }
}

/** One record of every subject kind, pending at its first requirement. */
export function recordsByKind(): Record<string, ApprovalRecord> {
  return {
    shellStage1: shellRecord(1),
    shellStage2: shellRecord(2),
    fileAccess: fileRecord(),
    network: fileRecord({
      tool: 'http_fetch',
      rawArgs: '{"url":"https://api.example.com/v1/items"}',
      subject: {
        kind: 'network',
        host: 'api.example.com',
        port: 443,
        protocol: 'https',
        origin: { kind: 'command', command: 'curl https://api.example.com/v1/items' },
      },
      requiredCapabilities: ['net-connect:https://api.example.com:443'],
    }),
    process: fileRecord({
      tool: 'kill_process',
      rawArgs: '{"pid":4242}',
      subject: { kind: 'process', target: 'node server.js (pid 4242)' },
      requiredCapabilities: ['process:node server.js (pid 4242)'],
    }),
    unixSocket: fileRecord({
      tool: 'docker',
      rawArgs: '{"args":["ps"]}',
      subject: { kind: 'unixSocket', path: '/var/run/docker.sock' },
      requiredCapabilities: ['unix-socket:/var/run/docker.sock'],
    }),
    tool: fileRecord({
      tool: 'mcp__github__create_issue',
      title: 'Create a GitHub issue',
      rawArgs: '{"repo":"acme/widgets","title":"Flaky test in CI"}',
      subject: { kind: 'tool', toolName: 'mcp__github__create_issue' },
      requiredCapabilities: ['tool:mcp__github__create_issue'],
    }),
    computerUseTakeover: fileRecord({
      tool: 'computer',
      rawArgs: '{"action":"click","x":512,"y":300}',
      subject: { kind: 'computerUseTakeover', holder: { kind: 'user', name: 'desktop session' } },
      cuaCardFacts: {
        windowTitle: 'Checkout — Example Shop',
        page: { host: 'shop.example.com', hostAscii: 'shop.example.com' },
        steps: [{ summary: 'Click "Place order"' }, { kind: 'type', x: 10, y: 20 }, 'Press Enter'],
        data: [
          { kind: 'secret', mask: 'ghp_…3f9a' },
          { kind: 'other', value: 'shipping address' },
        ],
      },
      requiredCapabilities: [],
    }),
    unknown: fileRecord({
      tool: 'teleport',
      rawArgs: 'not json at all',
      subject: { kind: 'quantumTunnel', toolName: 'teleport', destination: 'mars' },
      requiredCapabilities: [],
    }),
  };
}

// Looking into a rendered card as data.

export type Json = Record<string, unknown>;

export function blocksOf(message: RenderedMessage): Json[] {
  return message.blocks as Json[];
}

export function blocksOfType(message: RenderedMessage, type: string): Json[] {
  return blocksOf(message).filter((b) => b.type === type);
}

/** Every text of every text object in the blocks (or only those of `types`), in order. */
export function texts(
  message: RenderedMessage,
  types: ReadonlyArray<'mrkdwn' | 'plain_text'> = ['mrkdwn', 'plain_text'],
): string[] {
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) for (const item of v) walk(item);
    else if (typeof v === 'object' && v !== null) {
      const o = v as Json;
      if ((o.type === 'mrkdwn' || o.type === 'plain_text') && typeof o.text === 'string') {
        if (types.includes(o.type)) out.push(o.text);
      } else for (const child of Object.values(o)) walk(child);
    }
  };
  walk(message.blocks);
  return out;
}

/** All block text joined, for "does the card say X" assertions. */
export function allText(message: RenderedMessage): string {
  return texts(message).join('\n');
}

export interface ButtonView {
  text: string;
  actionId: string;
  value: string;
  style: string | undefined;
  confirm: Json | undefined;
}

export function buttons(message: RenderedMessage): ButtonView[] {
  return blocksOfType(message, 'actions').flatMap((b) =>
    (b.elements as Json[]).map((e) => ({
      text: (e.text as { text: string }).text,
      actionId: e.action_id as string,
      value: e.value as string,
      style: e.style as string | undefined,
      confirm: e.confirm as Json | undefined,
    })),
  );
}

export function headerText(message: RenderedMessage): string {
  const header = blocksOfType(message, 'header')[0];
  if (!header) throw new Error('card has no header');
  return (header.text as { text: string }).text;
}
