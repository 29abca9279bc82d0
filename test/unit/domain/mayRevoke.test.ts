// Who may see and revoke a grant: the pure rule (authorizeRevoke) and the Authorizer that gathers
// what it needs (the grant's route's rules and channel, the admins, user group members, who the
// user is in Slack).

import { describe, expect, it } from 'vitest';
import { type Authorization, authorizeRevoke } from '../../../src/domain/authorization.js';
import { OPEN_RULES, type RouteRules } from '../../../src/domain/route.js';
import { captureLogger } from '../../support/logCapture.js';
import { testAuthorizer } from '../../support/testAuthorizer.js';

const DEPLOYS: RouteRules = {
  approvers: { users: ['U0ALICE'], usergroups: ['S0SRE'] },
  protectedWriteApprovers: { users: ['U0CAROL'], usergroups: [] },
  allowSelfApproval: false,
  rejectReason: 'optional',
  quickReasons: [],
  quorum: 1,
  allowExternal: false,
  allowGuests: false,
};

describe('authorizeRevoke', () => {
  const notApprover: Authorization = {
    allowed: false,
    why: 'notApprover',
    route: 'deploys',
    approvers: DEPLOYS.approvers!,
    protectedWrite: false,
  };

  it('lets whoever may decide on the route revoke, for the same reason', () => {
    for (const onRoute of [
      { allowed: true, because: 'admin' },
      { allowed: true, because: 'user' },
      { allowed: true, because: 'usergroup', usergroup: 'S0SRE' },
      { allowed: true, because: 'channelMember', channel: 'C0OPEN' },
    ] as const) {
      expect(authorizeRevoke({ grantedBy: 'U0GRANTER' }, onRoute)).toEqual(onRoute);
    }
  });

  it('refuses anyone else, the granter too, naming the granter and why the route refuses them', () => {
    expect(authorizeRevoke({ grantedBy: 'U0GRANTER' }, notApprover)).toEqual({
      allowed: false,
      grantedBy: 'U0GRANTER',
      route: notApprover,
    });
    const gone: Authorization = { allowed: false, why: 'routeGone', route: 'old' };
    expect(authorizeRevoke({ grantedBy: 'U0GRANTER' }, gone)).toEqual({
      allowed: false,
      grantedBy: 'U0GRANTER',
      route: gone,
    });
  });
});

describe('Authorizer.mayRevoke', () => {
  const asked: string[] = [];
  const { logger } = captureLogger();
  const authorizer = testAuthorizer({
    rulesOf: (route) =>
      route === 'deploys' ? DEPLOYS : route === undefined || route === 'open' ? OPEN_RULES : undefined,
    channelOf: (route) => (route === 'deploys' ? 'C0DEPLOYS' : 'C0OPEN'),
    admins: ['U0ADA'],
    // Bob owns the host: on deploys he may not decide his own agent's approvals.
    ownerOf: () => 'U0BOB',
    groups: async (group) => {
      asked.push(group);
      return new Set(group === 'S0SRE' ? ['U0SAM'] : []);
    },
    people: {
      U0GUEST: { teamId: 'T1', guest: true },
      U0PARTNER: { teamId: 'T2', guest: false },
    },
    channels: { C0OPEN: ['U0BOB', 'U0EVE', 'U0GUEST', 'U0PARTNER'], C0ELSEWHERE: ['U0FRANK'] },
    logger,
  });
  const grant = (
    route: string,
    grantedBy = 'U0GRANTER',
    channel = route === 'deploys' ? 'C0DEPLOYS' : 'C0OPEN',
  ) => ({
    grantedBy,
    route,
    channel,
  });

  it('follows the route rules: approvers, group members, admins', async () => {
    asked.length = 0;
    expect(await authorizer.mayRevoke('U0ALICE', grant('deploys'))).toEqual({
      allowed: true,
      because: 'user',
    });
    expect(asked).toEqual([]);
    expect(await authorizer.mayRevoke('U0SAM', grant('deploys'))).toEqual({
      allowed: true,
      because: 'usergroup',
      usergroup: 'S0SRE',
    });
    expect(asked).toEqual(['S0SRE']);
    expect(await authorizer.mayRevoke('U0ADA', grant('deploys'))).toEqual({
      allowed: true,
      because: 'admin',
    });
  });

  it('no longer lets a granter who may not decide on the route see or revoke their grant', async () => {
    expect(await authorizer.mayRevoke('U0GRANTER', grant('deploys'))).toMatchObject({
      allowed: false,
      grantedBy: 'U0GRANTER',
      route: { why: 'notApprover' },
    });
    expect(await authorizer.mayRevoke('U0ALICE', grant('deploys', 'U0ALICE'))).toEqual({
      allowed: true,
      because: 'user',
    });
  });

  it('uses the ordinary approvers (grants never cover protected writes)', async () => {
    const carol = await authorizer.mayRevoke('U0CAROL', grant('deploys'));
    expect(carol).toMatchObject({ allowed: false, route: { why: 'notApprover' } });
  });

  it('refuses an outsider, saying who may', async () => {
    expect(await authorizer.mayRevoke('U0EVE', grant('deploys'))).toEqual({
      allowed: false,
      grantedBy: 'U0GRANTER',
      route: {
        allowed: false,
        why: 'notApprover',
        route: 'deploys',
        approvers: DEPLOYS.approvers,
        protectedWrite: false,
      },
    });
  });

  it("on a route without approvers: the members of the grant's channel, never a guest or another team", async () => {
    expect(await authorizer.mayRevoke('U0EVE', grant('open'))).toEqual({
      allowed: true,
      because: 'channelMember',
      channel: 'C0OPEN',
    });
    expect(await authorizer.mayRevoke('U0FRANK', grant('open'))).toMatchObject({
      allowed: false,
      route: { why: 'notChannelMember', channel: 'C0OPEN' },
    });
    // The grant's own channel counts, not the route's configured one.
    expect(await authorizer.mayRevoke('U0FRANK', grant('open', 'U0GRANTER', 'C0ELSEWHERE'))).toMatchObject({
      allowed: true,
    });
    expect(await authorizer.mayRevoke('U0GUEST', grant('open'))).toMatchObject({ route: { why: 'guest' } });
    expect(await authorizer.mayRevoke('U0PARTNER', grant('open'))).toMatchObject({
      route: { why: 'external' },
    });
    expect(await authorizer.mayRevoke('U0ADA', grant('open'))).toEqual({ allowed: true, because: 'admin' });
  });

  it('does not apply the owner rule: taking a permission back needs no second person', async () => {
    expect(await authorizer.mayRevoke('U0BOB', grant('open'))).toMatchObject({ allowed: true });
    expect(await authorizer.decidesOn('U0BOB', 'open')).toBe(true);
  });

  it('leaves a grant of a route no longer configured to the admins', async () => {
    expect(await authorizer.mayRevoke('U0ALICE', grant('gone'))).toMatchObject({
      allowed: false,
      route: { why: 'routeGone', route: 'gone' },
    });
    expect(await authorizer.mayRevoke('U0GRANTER', grant('gone'))).toMatchObject({
      allowed: false,
      route: { why: 'routeGone' },
    });
    expect(await authorizer.mayRevoke('U0ADA', grant('gone'))).toEqual({ allowed: true, because: 'admin' });
  });

  it('decidesOn says whether a user may decide a route (the channels their Home lists grants of)', async () => {
    expect(await authorizer.decidesOn('U0ALICE', 'deploys')).toBe(true);
    expect(await authorizer.decidesOn('U0EVE', 'deploys')).toBe(false);
    expect(await authorizer.decidesOn('U0EVE', 'gone')).toBe(false);
    expect(await authorizer.decidesOn('U0ADA', 'gone')).toBe(true);
    expect(await authorizer.decidesOn('U0EVE', 'open')).toBe(true);
    expect(await authorizer.decidesOn('U0FRANK', 'open')).toBe(false);
  });
});
