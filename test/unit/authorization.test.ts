import { describe, expect, it } from 'vitest';
import {
  type ApprovalAuthority,
  type Authorization,
  authorize,
  groupsToAsk,
  type Refused,
} from '../../src/relay/authorization.js';
import { notAuthorizedInModalText, notAuthorizedText } from '../../src/relay/userMessages.js';
import { OPEN_RULES, type RouteRules } from '../../src/routing/route.js';

// The rules table of who may decide, and the one sentence each refusal becomes.

const DEPLOYS: RouteRules = {
  approvers: { users: ['U0ALICE', 'U0BOB'], usergroups: ['S0SRE'] },
  protectedWriteApprovers: { users: ['U0CAROL'], usergroups: [] },
  allowSelfApproval: false,
  rejectReason: 'required',
  quickReasons: [],
  quorum: 1,
};
const ADMINS = ['U0ADMIN'];

function authority(overrides: Partial<ApprovalAuthority> = {}): ApprovalAuthority {
  return { route: 'deploys', rules: DEPLOYS, protectedWrite: false, owner: 'U0BOB', ...overrides };
}

const SRE = new Set(['S0SRE']);
const NONE = new Set<string>();

describe('authorize', () => {
  const table: Array<[string, ApprovalAuthority, string, ReadonlySet<string>, Authorization]> = [
    ['a listed user', authority(), 'U0ALICE', NONE, { allowed: true, because: 'user' }],
    [
      'a member of a listed group',
      authority(),
      'U0DAVE',
      SRE,
      { allowed: true, because: 'usergroup', usergroup: 'S0SRE' },
    ],
    [
      'an outsider',
      authority(),
      'U0EVE',
      NONE,
      {
        allowed: false,
        why: 'notApprover',
        route: 'deploys',
        approvers: DEPLOYS.approvers!,
        protectedWrite: false,
      },
    ],
    ['an admin', authority(), 'U0ADMIN', NONE, { allowed: true, because: 'admin' }],
    [
      'the owner, though an approver',
      authority(),
      'U0BOB',
      NONE,
      { allowed: false, why: 'selfApproval', route: 'deploys' },
    ],
    [
      'the owner where self-approval is allowed',
      authority({ rules: { ...DEPLOYS, allowSelfApproval: true } }),
      'U0BOB',
      NONE,
      { allowed: true, because: 'user' },
    ],
    [
      'an admin who owns the agent',
      authority({ owner: 'U0ADMIN' }),
      'U0ADMIN',
      NONE,
      { allowed: false, why: 'selfApproval', route: 'deploys' },
    ],
    [
      'an approver on a protected write',
      authority({ protectedWrite: true }),
      'U0ALICE',
      SRE,
      {
        allowed: false,
        why: 'notApprover',
        route: 'deploys',
        approvers: DEPLOYS.protectedWriteApprovers!,
        protectedWrite: true,
      },
    ],
    [
      'a protected-write approver',
      authority({ protectedWrite: true }),
      'U0CAROL',
      NONE,
      { allowed: true, because: 'user' },
    ],
    [
      'an approver on a protected write of a route without protectedWriteApprovers',
      authority({ protectedWrite: true, rules: { ...DEPLOYS, protectedWriteApprovers: undefined } }),
      'U0ALICE',
      NONE,
      { allowed: true, because: 'user' },
    ],
    [
      'anyone on a route without approvers',
      authority({ rules: OPEN_RULES }),
      'U0EVE',
      NONE,
      { allowed: true, because: 'anyone' },
    ],
    [
      'anyone on a route gone from the file',
      authority({ rules: undefined }),
      'U0ALICE',
      NONE,
      { allowed: false, why: 'routeGone', route: 'deploys' },
    ],
    [
      'an admin on a route gone from the file',
      authority({ rules: undefined }),
      'U0ADMIN',
      NONE,
      { allowed: true, because: 'admin' },
    ],
  ];

  it.each(table)('%s', (_name, approval, userId, memberOf, expected) => {
    expect(authorize(approval, userId, ADMINS, memberOf)).toEqual(expected);
  });
});

describe('groupsToAsk', () => {
  it('asks Slack only when membership could change the answer', () => {
    expect(groupsToAsk(authority(), 'U0EVE', ADMINS)).toEqual(['S0SRE']);
    expect(groupsToAsk(authority(), 'U0ALICE', ADMINS)).toEqual([]);
    expect(groupsToAsk(authority(), 'U0ADMIN', ADMINS)).toEqual([]);
    expect(groupsToAsk(authority({ protectedWrite: true }), 'U0EVE', ADMINS)).toEqual([]);
    expect(groupsToAsk(authority({ rules: undefined }), 'U0EVE', ADMINS)).toEqual([]);
  });
});

describe('refusal texts', () => {
  const notApprover = (
    approvers: { users: string[]; usergroups: string[] },
    protectedWrite = false,
  ): Refused => ({
    allowed: false,
    why: 'notApprover',
    route: 'deploys',
    approvers,
    protectedWrite,
  });

  it('names who may decide, in one sentence', () => {
    expect(notAuthorizedText(notApprover({ users: ['U0ALICE'], usergroups: ['S0SRE'] }))).toBe(
      'Only <@U0ALICE> or members of <!subteam^S0SRE> can decide on deploys.',
    );
    expect(notAuthorizedText(notApprover({ users: ['U0ALICE', 'U0BOB', 'U0CAROL'], usergroups: [] }))).toBe(
      'Only <@U0ALICE>, <@U0BOB> or <@U0CAROL> can decide on deploys.',
    );
    expect(notAuthorizedText(notApprover({ users: [], usergroups: ['S0SRE', 'S0OPS'] }))).toBe(
      'Only members of <!subteam^S0SRE> or <!subteam^S0OPS> can decide on deploys.',
    );
    expect(notAuthorizedText(notApprover({ users: [], usergroups: [] }))).toBe(
      'Only admins can decide on deploys.',
    );
  });

  it('says when it is a protected write, the requester, or a route gone', () => {
    expect(notAuthorizedText(notApprover({ users: ['U0CAROL'], usergroups: [] }, true))).toBe(
      'This is a protected write: only <@U0CAROL> can decide protected writes on deploys.',
    );
    expect(notAuthorizedText({ allowed: false, why: 'selfApproval', route: 'deploys' })).toBe(
      "You cannot approve your own agent's request on deploys: someone else must decide it.",
    );
    expect(notAuthorizedText({ allowed: false, why: 'routeGone', route: 'old' })).toBe(
      'The route this card was posted by (old) is no longer configured, so only admins can decide on it.',
    );
  });

  it('never builds live markup from what is not a Slack ID, and keeps mentions out of the modal', () => {
    const text = notAuthorizedText({
      allowed: false,
      why: 'notApprover',
      route: '<!channel>',
      approvers: { users: ['<!here>'], usergroups: ['<!everyone>'] },
      protectedWrite: false,
    });
    expect(text).not.toMatch(/<!(channel|here|everyone)>/);
    expect(notAuthorizedInModalText(notApprover({ users: ['U0ALICE'], usergroups: ['S0SRE'] }))).not.toMatch(
      /<[@!]/,
    );
  });
});
