import { type ApprovalInput, shellApproval } from '../../test/support/fakeHost.js';

// What happens to each approval of a chaos burst, fixed by its index so that every fault run asks
// the same questions and its users answer them the same way. Over every twenty approvals:
// eleven are allowed once, two allowed more widely, two rejected with a reason through the modal,
// two pressed by two users at once (once with different choices, once with the same), two the
// host resolves by policy on its own (one approved, one denied), and one nobody answers. Two in
// twenty are multi-stage shell commands; the rest are file writes.

export const SESSIONS = [
  { sessionId: '0198f0aa-1111-7000-8000-0000000000aa', title: 'Bump the version' },
  { sessionId: '0198f0aa-2222-7000-8000-0000000000bb', title: 'Fix the flaky test' },
  { sessionId: '0198f0aa-3333-7000-8000-0000000000cc', title: 'Tidy the ledger' },
] as const;

/** Tool → channel; a tool without a route lands in the bot's SLACK_CHANNEL. */
export const ROUTES: Record<string, string> = {
  write_file: 'C0CHAOSFILES',
  edit_file: 'C0CHAOSEDITS',
  bash: 'C0CHAOSSHELL',
};
const FILE_TOOLS = ['write_file', 'edit_file', 'read_file'] as const;

export const USERS = ['U0ALICE', 'U0BOB', 'U0CAROL', 'U0DAVE'] as const;

export type Fate =
  | 'allowOnce'
  | 'allowWider'
  | 'rejectWithReason'
  | 'twoUsersTwoChoices'
  | 'twoUsersSameChoice'
  | 'policyApproves'
  | 'policyDenies'
  | 'nobody';

const FATES: readonly Fate[] = [
  ...Array<Fate>(11).fill('allowOnce'),
  'allowWider',
  'allowWider',
  'rejectWithReason',
  'rejectWithReason',
  'twoUsersTwoChoices',
  'twoUsersSameChoice',
  'policyApproves',
  'policyDenies',
  'nobody',
];
const SHELL_SLOTS = new Set([3, 15]);

export interface Plan {
  index: number;
  approvalId: string;
  fate: Fate;
  /** Shell stages (argv each), or undefined for a file write. */
  stages?: string[][];
  /** Who presses (the first one alone unless two press at once). */
  users: [string, string];
  /**
   * How slow its users are to press, from 0 (at once) to 1 (the slowest): people read a card
   * before they press, some longer than others.
   */
  pace: number;
  approval: ApprovalInput;
}

export const approvalIdOf = (index: number) => `chaos-${String(index).padStart(6, '0')}`;

/** The plan of an approval by id; a re-asked one (`…-r2`) keeps the plan of the one it replaces. */
export function planIndexOf(approvalId: string): number | undefined {
  const m = /^chaos-(\d{6})(?:-r\d+)*$/.exec(approvalId);
  return m ? Number(m[1]) : undefined;
}

const FILE_CHOICES = [
  { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
  {
    choiceId: 'allow_session',
    label: 'Allow for this session',
    decision: 'approvedForSession',
    scope: 'session',
    rulePreview: 'write files under /srv/repo/src for this session',
  },
  { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once', acceptsFeedback: true },
];

export function planOf(index: number): Plan {
  const approvalId = approvalIdOf(index);
  const slot = index % FATES.length;
  const fate = FATES[slot]!;
  const sessionId = SESSIONS[index % SESSIONS.length]!.sessionId;
  const users: [string, string] = [USERS[index % USERS.length]!, USERS[(index + 1) % USERS.length]!];
  const pace = ((index * 379) % 1_000) / 1_000;
  if (SHELL_SLOTS.has(slot)) {
    const stages = [
      ['npm', 'test', '--', `--shard=${index}`],
      ['git', 'commit', '-am', `chaos ${index}`],
      ['git', 'push'],
    ].slice(0, 2 + (index % 2));
    return {
      index,
      approvalId,
      fate,
      stages,
      users,
      pace,
      approval: shellApproval({ approvalId, sessionId, stages }),
    };
  }
  const tool = FILE_TOOLS[index % FILE_TOOLS.length]!;
  const path = `/srv/repo/src/module${index}.ts`;
  return {
    index,
    approvalId,
    fate,
    users,
    pace,
    approval: {
      approvalId,
      sessionId,
      toolName: tool,
      rawArgs: JSON.stringify({ path, content: `export const chaos = ${index};\n` }),
      subject: { kind: 'fileAccess', toolName: tool, path, access: tool === 'read_file' ? 'read' : 'write' },
      availableChoices: FILE_CHOICES,
      reason: `The agent wants to change module ${index}.`,
    },
  };
}

/** One press a user makes on a card: a choice, and the reason typed into the modal for it. */
export interface Press {
  userId: string;
  /** Choice ids in order of preference: the first one the card offers is pressed. */
  choices: string[];
  reason?: string;
}

const WIDER = ['allow_session', 'allow_local_prefix', 'allow_once'];

/**
 * The presses for the stage a card asks now, or none when nobody is meant to press. Every stage
 * but a shell command's last is allowed once (by two users at once when that is the fate).
 */
export function pressesFor(plan: Plan, sourceIndex: number): Press[] {
  const [first, second] = plan.users;
  const last = plan.stages ? sourceIndex >= plan.stages.length - 1 : true;
  switch (plan.fate) {
    case 'policyApproves':
    case 'policyDenies':
    case 'nobody':
      return [];
    case 'twoUsersTwoChoices':
      return [
        { userId: first, choices: ['allow_once'] },
        { userId: second, choices: WIDER },
      ];
    case 'twoUsersSameChoice':
      return [
        { userId: first, choices: ['allow_once'] },
        { userId: second, choices: ['allow_once'] },
      ];
    case 'allowWider':
      return [{ userId: first, choices: last ? WIDER : ['allow_once'] }];
    case 'rejectWithReason':
      return last
        ? [{ userId: first, choices: ['abort'], reason: `Not now: ${plan.approvalId} waits for review.` }]
        : [{ userId: first, choices: ['allow_once'] }];
    default:
      return [{ userId: first, choices: ['allow_once'] }];
  }
}
