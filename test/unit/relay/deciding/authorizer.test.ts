// The Authorizer gathers what the pure rules need (route rules, user groups, who the user is,
// who is in the channel) and refuses whenever Slack cannot say: these pin that it does.

import { describe, expect, it } from 'vitest';
import { OPEN_RULES, type RouteRules } from '../../../../src/domain/route.js';
import { captureLogger } from '../../../support/logCapture.js';
import { testAuthorizer } from '../../../support/testAuthorizer.js';

const SRE: RouteRules = { ...OPEN_RULES, approvers: { users: [], usergroups: ['S0SRE'] } };
const record = (route: string, extra: Record<string, unknown> = {}) => ({
  route,
  protectedWrite: false,
  hostId: 'main',
  slack: { channel: 'C0APPROVALS' },
  ...extra,
});

describe('Authorizer', () => {
  it('counts a user group it cannot read as not holding the user, and says so in the log', async () => {
    const { logger, lines } = captureLogger();
    const authorizer = testAuthorizer({
      rulesOf: () => SRE,
      groups: async () => {
        throw new Error('missing_scope');
      },
      logger,
    });
    expect(await authorizer.check('U0CAROL', record('sre'))).toEqual({
      allowed: false,
      why: 'notApprover',
      route: 'sre',
      approvers: SRE.approvers,
      protectedWrite: false,
    });
    expect(lines.some((l) => l.msg === 'could not read user group members' && l.usergroup === 'S0SRE')).toBe(
      true,
    );
  });

  it('refuses when Slack does not say who the user is, who is in the channel, or which workspace it is', async () => {
    const fails = async (): Promise<never> => {
      throw new Error('Slack is away');
    };
    const noPerson = testAuthorizer({ people: fails });
    expect(await noPerson.check('U0ALICE', record('open'))).toMatchObject({
      why: 'unverified',
      what: 'user',
    });
    const noChannel = testAuthorizer({ channels: fails });
    expect(await noChannel.check('U0ALICE', record('open'))).toMatchObject({
      why: 'unverified',
      what: 'channel',
    });
    const noWorkspace = testAuthorizer({ workspace: undefined });
    expect(await noWorkspace.check('U0ALICE', record('open'))).toMatchObject({
      why: 'unverified',
      what: 'workspace',
    });
    // The same user, when Slack answers, decides as a member of the card's channel.
    expect(await testAuthorizer().check('U0ALICE', record('open'))).toEqual({
      allowed: true,
      because: 'channelMember',
      channel: 'C0APPROVALS',
    });
  });

  it('never lowers a quorum: the one a record was placed with, the route’s now, the risk rules’', () => {
    const quorumOf = (route: number, place = 1) =>
      testAuthorizer({
        rulesOf: (name) => (name === 'gone' ? undefined : { ...OPEN_RULES, quorum: route }),
        placeNow: () => ({ name: 'now', channel: 'C0', rules: { ...OPEN_RULES, quorum: place } }),
      });
    expect(quorumOf(1).quorum(record('r', { quorum: 3 }))).toBe(3);
    expect(quorumOf(2).quorum(record('r'))).toBe(2);
    expect(quorumOf(1).quorum(record('r', { risks: [{ name: 'x', warning: 'w', quorum: 4 }] }))).toBe(4);
    // A route gone: the record's, or the route that would place it now if that asks more.
    expect(quorumOf(1).quorum(record('gone', { quorum: 2 }))).toBe(2);
    expect(quorumOf(1, 3).quorum(record('gone', { quorum: 2 }))).toBe(3);
  });

  it('lets a channel member read a card in full, but never a stranger', async () => {
    const authorizer = testAuthorizer({
      rulesOf: () => ({ ...OPEN_RULES, approvers: { users: ['U0ALICE'], usergroups: [] } }),
      people: { U0GUEST: { teamId: 'T1', guest: true } },
      channels: { C0APPROVALS: ['U0EVE', 'U0GUEST'] },
    });
    expect(await authorizer.check('U0EVE', record('deploys'))).toMatchObject({ why: 'notApprover' });
    expect(await authorizer.mayRead('U0EVE', record('deploys'))).toEqual({
      allowed: true,
      because: 'channelMember',
      channel: 'C0APPROVALS',
    });
    expect(await authorizer.mayRead('U0FRANK', record('deploys'))).toMatchObject({ why: 'notApprover' });
    expect(await authorizer.mayRead('U0GUEST', record('deploys'))).toMatchObject({ why: 'guest' });
  });
});

describe('Authorizer: acting as an admin', () => {
  it('is an admin named in the config who is no stranger, as Slack says now', async () => {
    const admins = ['U0ADA'];
    expect(await testAuthorizer({ admins }).actsAsAdmin('U0ADA')).toBe(true);
    expect(await testAuthorizer({ admins }).actsAsAdmin('U0BOB')).toBe(false);
    const guest = testAuthorizer({ admins, people: { U0ADA: { teamId: 'T1', guest: true } } });
    expect(await guest.actsAsAdmin('U0ADA')).toBe(false);
    const external = testAuthorizer({ admins, people: { U0ADA: { teamId: 'T9', guest: false } } });
    expect(await external.actsAsAdmin('U0ADA')).toBe(false);
    const unconfirmed = testAuthorizer({ admins, workspace: undefined });
    expect(await unconfirmed.actsAsAdmin('U0ADA')).toBe(false);
    const slackAway = testAuthorizer({
      admins,
      people: async () => {
        throw new Error('Slack is away');
      },
    });
    expect(await slackAway.actsAsAdmin('U0ADA')).toBe(false);
    // Membership alone (what a delegate needs to be reached): anyone of the team, admin or not.
    expect(await testAuthorizer().isMember('U0BOB')).toBe(true);
    expect(await guest.isMember('U0ADA')).toBe(false);
    const gone = testAuthorizer({ people: { U0BOB: { teamId: 'T1', guest: false, deactivated: true } } });
    expect(await gone.isMember('U0BOB')).toBe(false);
  });
});

describe('Authorizer: an admin who became a stranger', () => {
  // A route that lets guests or another team in lets them in as approvers, not as admins.
  const GUESTS_WELCOME: RouteRules = { ...SRE, allowGuests: true, allowExternal: true };
  const admins = ['U0ADA'];
  const asGuest = { U0ADA: { teamId: 'T1', guest: true } };
  const asExternal = { U0ADA: { teamId: 'T9', guest: false } };

  it.each([
    ['a guest', asGuest],
    ['of another team', asExternal],
  ])('decides, lists and revokes nothing as an admin once %s', async (_, people) => {
    const authorizer = testAuthorizer({
      admins,
      people,
      rulesOf: () => GUESTS_WELCOME,
      groups: { S0SRE: [] },
    });
    expect(await authorizer.check('U0ADA', record('sre'))).toMatchObject({
      allowed: false,
      why: 'notApprover',
    });
    expect(await authorizer.decidesOn('U0ADA', 'sre')).toBe(false);
    expect(
      await authorizer.mayRevoke('U0ADA', { grantedBy: 'U0BOB', route: 'sre', channel: 'C0APPROVALS' }),
    ).toMatchObject({ allowed: false });
  });

  it('still decides as an approver the route names, guest or not', async () => {
    const authorizer = testAuthorizer({
      admins,
      people: asGuest,
      rulesOf: () => GUESTS_WELCOME,
      groups: { S0SRE: ['U0ADA'] },
    });
    expect(await authorizer.check('U0ADA', record('sre'))).toEqual({
      allowed: true,
      because: 'usergroup',
      usergroup: 'S0SRE',
    });
  });

  it('decides as an admin while a full member', async () => {
    const authorizer = testAuthorizer({ admins, rulesOf: () => GUESTS_WELCOME, groups: { S0SRE: [] } });
    expect(await authorizer.check('U0ADA', record('sre'))).toEqual({ allowed: true, because: 'admin' });
  });
});

describe('Authorizer: standing in for someone away', () => {
  const ALICE_ONLY: RouteRules = { ...OPEN_RULES, approvers: { users: ['U0ALICE'], usergroups: [] } };
  const away = (userId: string, delegate: string) => ({
    userId,
    delegate,
    until: '2099-01-01T00:00:00Z',
    since: '2026-12-01T00:00:00Z',
  });

  it('lets a delegate decide what the person away may, saying for whom', async () => {
    const authorizer = testAuthorizer({
      rulesOf: () => ALICE_ONLY,
      standIns: { U0BOB: [away('U0ALICE', 'U0BOB')] },
    });
    expect(await authorizer.check('U0BOB', record('r'))).toEqual({
      allowed: true,
      because: 'delegate',
      for: 'U0ALICE',
      as: { allowed: true, because: 'user' },
    });
    // Someone else gets nothing from it.
    expect(await authorizer.check('U0CAROL', record('r'))).toMatchObject({
      allowed: false,
      why: 'notApprover',
    });
  });

  it('goes one hop only, never round the owner rule, never to a stranger', async () => {
    const standIns = { U0BOB: [away('U0ALICE', 'U0BOB')], U0CAROL: [away('U0BOB', 'U0CAROL')] };
    const hop = testAuthorizer({ rulesOf: () => ALICE_ONLY, standIns });
    expect(await hop.check('U0CAROL', record('r'))).toMatchObject({ allowed: false, why: 'notApprover' });
    // Where the owner rule forbids it (allowSelfApproval: false) the owner's delegate gets nothing.
    const FOUR_EYES = { ...ALICE_ONLY, allowSelfApproval: false };
    const owned = testAuthorizer({ rulesOf: () => FOUR_EYES, standIns, ownerOf: () => 'U0ALICE' });
    expect(await owned.check('U0BOB', record('r'))).toMatchObject({ allowed: false, why: 'notApprover' });
    const ownerIsDelegate = testAuthorizer({ rulesOf: () => FOUR_EYES, standIns, ownerOf: () => 'U0BOB' });
    expect(await ownerIsDelegate.check('U0BOB', record('r'))).toMatchObject({
      allowed: false,
      why: 'selfApproval',
    });
    const guest = testAuthorizer({
      rulesOf: () => ALICE_ONLY,
      standIns,
      people: { U0BOB: { teamId: 'T1', guest: true } },
    });
    expect(await guest.check('U0BOB', record('r'))).toMatchObject({ allowed: false, why: 'guest' });
  });

  it('stands in to decide only: listing and revoking grants and the stats rest on the user’s own rights', async () => {
    const authorizer = testAuthorizer({
      rulesOf: () => ALICE_ONLY,
      admins: ['U0ALICE'],
      standIns: { U0BOB: [away('U0ALICE', 'U0BOB')] },
    });
    // Bob may decide Alice's requests while she is away...
    expect(await authorizer.check('U0BOB', record('r'))).toMatchObject({
      allowed: true,
      because: 'delegate',
    });
    // ...but not see the route as hers (grant lists, stats), nor revoke her grants.
    expect(await authorizer.decidesOn('U0BOB', 'r')).toBe(false);
    const grant = { grantedBy: 'U0ALICE', route: 'r', channel: 'C0TEST' };
    expect(await authorizer.mayRevoke('U0BOB', grant)).toMatchObject({ allowed: false });
    expect(await authorizer.decidesOn('U0ALICE', 'r')).toBe(true);
    expect(await authorizer.mayRevoke('U0ALICE', grant)).toMatchObject({ allowed: true });
  });

  it('refuses as before, and says so in the log, when it cannot read whom the user stands in for', async () => {
    const { logger, lines } = captureLogger();
    const authorizer = testAuthorizer({
      rulesOf: () => ALICE_ONLY,
      standIns: async () => {
        throw new Error('Redis is away');
      },
      logger,
    });
    expect(await authorizer.check('U0BOB', record('r'))).toMatchObject({
      allowed: false,
      why: 'notApprover',
    });
    expect(lines.some((l) => l.msg === 'could not read whom a user stands in for')).toBe(true);
  });
});

describe('Authorizer: a stranger, across every route', () => {
  it('names why, and the routes that let them in all the same; a member is none', async () => {
    const rules: Record<string, RouteRules> = {
      guests: { ...OPEN_RULES, allowGuests: true },
      partners: { ...OPEN_RULES, allowExternal: true },
      closed: OPEN_RULES,
    };
    const routes = ['guests', 'partners', 'closed', 'gone'];
    const people = {
      U0GUEST: { teamId: 'T1', guest: true },
      U0PARTNER: { teamId: 'T9', guest: false },
      U0GONE: { teamId: 'T1', guest: false, deactivated: true },
    };
    const authorizer = testAuthorizer({ rulesOf: (route) => (route ? rules[route] : OPEN_RULES), people });
    expect(await authorizer.asStranger('U0BOB', routes)).toBeUndefined();
    expect(await authorizer.asStranger('U0GUEST', routes)).toMatchObject({
      refused: { why: 'guest' },
      letIn: ['guests'],
    });
    expect(await authorizer.asStranger('U0PARTNER', routes)).toMatchObject({
      refused: { why: 'external' },
      letIn: ['partners'],
    });
    expect(await authorizer.asStranger('U0GUEST', ['closed'])).toMatchObject({ letIn: [] });
    // No route lets in a deactivated account, or one Slack does not confirm now.
    expect(await authorizer.asStranger('U0GONE', routes)).toMatchObject({
      refused: { why: 'deactivated' },
      letIn: [],
    });
    const slackAway = testAuthorizer({
      rulesOf: (route) => (route ? rules[route] : OPEN_RULES),
      people: async () => {
        throw new Error('Slack is away');
      },
    });
    expect(await slackAway.asStranger('U0BOB', routes)).toMatchObject({
      refused: { why: 'unverified', what: 'user' },
      letIn: [],
    });
  });
});
