import { describe, expect, it } from 'vitest';
import { notAuthorizedInModalText, notAuthorizedText } from '../../../src/cards/renderUserMessages.js';
import {
  type ApprovalAuthority,
  authorize,
  groupsToAsk,
  inChannel,
  isExternal,
  type Refused,
  strangerRefusal,
  type Verdict,
} from '../../../src/domain/authorization.js';
import { OPEN_RULES, type RouteRules } from '../../../src/domain/route.js';

// The rules table of who may decide, and the one sentence each refusal becomes.

const DEPLOYS: RouteRules = {
  approvers: { users: ['U0ALICE', 'U0BOB'], usergroups: ['S0SRE'] },
  protectedWriteApprovers: { users: ['U0CAROL'], usergroups: [] },
  allowSelfApproval: false,
  rejectReason: 'required',
  quickReasons: [],
  quorum: 1,
  allowExternal: false,
  allowGuests: false,
};
const ADMINS = ['U0ADMIN'];

function authority(overrides: Partial<ApprovalAuthority> = {}): ApprovalAuthority {
  return { route: 'deploys', rules: DEPLOYS, protectedWrite: false, owner: 'U0BOB', ...overrides };
}

const SRE = new Set(['S0SRE']);
const NONE = new Set<string>();

describe('authorize', () => {
  const table: Array<[string, ApprovalAuthority, string, ReadonlySet<string>, Verdict]> = [
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
    [
      'an admin who owns the agent, on a route gone from the file (the strictest rule applies)',
      authority({ rules: undefined, routeGone: true, owner: 'U0ADMIN' }),
      'U0ADMIN',
      NONE,
      { allowed: false, why: 'selfApproval', route: 'deploys' },
    ],
    [
      'the owner, on a route gone whose stand-in allows self-approval',
      authority({ rules: { ...OPEN_RULES, allowSelfApproval: true }, routeGone: true }),
      'U0BOB',
      NONE,
      { allowed: false, why: 'selfApproval', route: 'deploys' },
    ],
    [
      'an approver of the route that would place a record whose route is gone',
      authority({ rules: DEPLOYS, routeGone: true }),
      'U0ALICE',
      NONE,
      { allowed: true, because: 'user' },
    ],
  ];

  it.each(table)('%s', (_name, approval, userId, memberOf, expected) => {
    expect(authorize(approval, userId, ADMINS, memberOf)).toEqual(expected);
  });
});

describe('strangers', () => {
  const T1 = { teamId: 'T1' };
  const GRID = { teamId: 'T1', enterpriseId: 'E1' };
  const member = { teamId: 'T1', guest: false };
  const open = authority({ rules: OPEN_RULES });

  it("tells another team or enterprise apart from the bot's own", () => {
    expect(isExternal(member, T1)).toBe(false);
    expect(isExternal({ teamId: 'T2', guest: false }, T1)).toBe(true);
    expect(isExternal({ guest: false }, T1)).toBe(true);
    expect(isExternal({ teamId: 'T1', enterpriseId: 'E1', guest: false }, GRID)).toBe(false);
    expect(isExternal({ teamId: 'T1', enterpriseId: 'E2', guest: false }, GRID)).toBe(true);
    expect(isExternal(member, GRID)).toBe(true);
    expect(isExternal({ teamId: 'T1', enterpriseId: 'E1', guest: false }, T1)).toBe(true);
  });

  it('refuses users of another team and guests unless the route lets them in', () => {
    const external = { teamId: 'T2', guest: false };
    const guest = { teamId: 'T1', guest: true };
    expect(strangerRefusal(open, member, T1)).toBeUndefined();
    expect(strangerRefusal(open, external, T1)).toEqual({
      allowed: false,
      why: 'external',
      route: 'deploys',
    });
    expect(strangerRefusal(open, guest, T1)).toEqual({ allowed: false, why: 'guest', route: 'deploys' });
    const lenient = authority({ rules: { ...OPEN_RULES, allowExternal: true, allowGuests: true } });
    expect(strangerRefusal(lenient, external, T1)).toBeUndefined();
    expect(strangerRefusal(lenient, guest, T1)).toBeUndefined();
    // An external guest needs both.
    const externalOnly = authority({ rules: { ...OPEN_RULES, allowExternal: true } });
    expect(strangerRefusal(externalOnly, { teamId: 'T2', guest: true }, T1)).toMatchObject({ why: 'guest' });
  });

  it('refuses a deactivated account whatever the route lets in', () => {
    const lenient = authority({ rules: { ...OPEN_RULES, allowExternal: true, allowGuests: true } });
    const deactivated = { teamId: 'T1', guest: false, deactivated: true };
    expect(strangerRefusal(lenient, deactivated, T1)).toEqual({
      allowed: false,
      why: 'deactivated',
      route: 'deploys',
    });
  });

  it('lets nobody in on a guess: an unknown user, an unknown workspace, a route gone', () => {
    expect(strangerRefusal(open, undefined, T1)).toEqual({
      allowed: false,
      why: 'unverified',
      route: 'deploys',
      what: 'user',
    });
    expect(strangerRefusal(open, member, undefined)).toMatchObject({ why: 'unverified', what: 'workspace' });
    const gone = authority({
      rules: { ...OPEN_RULES, allowExternal: true, allowGuests: true },
      routeGone: true,
    });
    expect(strangerRefusal(gone, { teamId: 'T2', guest: false }, T1)).toMatchObject({ why: 'external' });
    expect(strangerRefusal(gone, { teamId: 'T1', guest: true }, T1)).toMatchObject({ why: 'guest' });
  });

  it('settles an open route by its channel: members only, nobody when Slack did not say', () => {
    const anyone: Verdict = { allowed: true, because: 'anyone' };
    const where = { route: 'deploys', channel: 'C0APPROVALS' };
    expect(inChannel(anyone, where, 'U0EVE', new Set(['U0EVE']))).toEqual({
      allowed: true,
      because: 'channelMember',
      channel: 'C0APPROVALS',
    });
    expect(inChannel(anyone, where, 'U0EVE', new Set(['U0ALICE']))).toEqual({
      allowed: false,
      why: 'notChannelMember',
      route: 'deploys',
      channel: 'C0APPROVALS',
    });
    expect(inChannel(anyone, where, 'U0EVE', undefined)).toMatchObject({
      why: 'unverified',
      what: 'channel',
    });
    expect(inChannel(anyone, { route: 'deploys' }, 'U0EVE', new Set(['U0EVE']))).toMatchObject({
      why: 'unverified',
    });
    // What the rules decided otherwise stands as it is.
    expect(inChannel({ allowed: true, because: 'user' }, where, 'U0ALICE', undefined)).toEqual({
      allowed: true,
      because: 'user',
    });
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

  it('tells strangers and non-members why, without naming anyone', () => {
    expect(notAuthorizedText({ allowed: false, why: 'external', route: 'deploys' })).toBe(
      'You belong to another Slack workspace or organization, and deploys does not let its users decide or see its approvals.',
    );
    expect(notAuthorizedText({ allowed: false, why: 'guest', route: 'deploys' })).toBe(
      'Guests cannot decide or see approvals on deploys.',
    );
    const notMember: Refused = {
      allowed: false,
      why: 'notChannelMember',
      route: 'deploys',
      channel: 'C0APPROVALS',
    };
    expect(notAuthorizedText(notMember)).toBe(
      'Only members of <#C0APPROVALS> can decide on deploys: join the channel, or ask one of its members.',
    );
    expect(notAuthorizedInModalText(notMember)).not.toMatch(/<[#@!]/);
    expect(notAuthorizedText({ allowed: false, why: 'unverified', route: 'deploys', what: 'user' })).toMatch(
      /could not confirm with Slack who you are/,
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
