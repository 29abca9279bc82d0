// Who may revoke a grant: the pure rule (authorizeRevoke) and the Authorizer that gathers what it
// needs (the grant's route's rules, the admins, user group members).

import { describe, expect, it } from 'vitest';
import { type Authorization, authorizeRevoke } from '../../src/relay/authorization.js';
import { Authorizer } from '../../src/relay/authorizer.js';
import { OPEN_RULES, type RouteRules } from '../../src/routing/route.js';
import { captureLogger } from '../support/logCapture.js';

const DEPLOYS: RouteRules = {
  approvers: { users: ['U0ALICE'], usergroups: ['S0SRE'] },
  protectedWriteApprovers: { users: ['U0CAROL'], usergroups: [] },
  allowSelfApproval: false,
  rejectReason: 'optional',
  quickReasons: [],
  quorum: 1,
};

describe('authorizeRevoke', () => {
  const notApprover: Authorization = {
    allowed: false,
    why: 'notApprover',
    route: 'deploys',
    approvers: DEPLOYS.approvers!,
    protectedWrite: false,
  };

  it('lets the granter revoke whatever the route says of them', () => {
    expect(authorizeRevoke({ grantedBy: 'U0GRANTER' }, 'U0GRANTER', notApprover)).toEqual({
      allowed: true,
      because: 'granter',
    });
  });

  it('lets whoever may decide on the route revoke, for the same reason', () => {
    for (const onRoute of [
      { allowed: true, because: 'admin' },
      { allowed: true, because: 'user' },
      { allowed: true, because: 'usergroup', usergroup: 'S0SRE' },
      { allowed: true, because: 'anyone' },
    ] as const) {
      expect(authorizeRevoke({ grantedBy: 'U0GRANTER' }, 'U0OTHER', onRoute)).toEqual(onRoute);
    }
  });

  it('refuses anyone else, naming the granter and why the route refuses them', () => {
    expect(authorizeRevoke({ grantedBy: 'U0GRANTER' }, 'U0EVE', notApprover)).toEqual({
      allowed: false,
      grantedBy: 'U0GRANTER',
      route: notApprover,
    });
    const gone: Authorization = { allowed: false, why: 'routeGone', route: 'old' };
    expect(authorizeRevoke({ grantedBy: 'U0GRANTER' }, 'U0EVE', gone)).toEqual({
      allowed: false,
      grantedBy: 'U0GRANTER',
      route: gone,
    });
  });
});

describe('Authorizer.mayRevoke', () => {
  const asked: string[] = [];
  const authorizer = new Authorizer({
    rulesOf: (route) =>
      route === 'deploys' ? DEPLOYS : route === undefined || route === 'open' ? OPEN_RULES : undefined,
    admins: ['U0ADA'],
    // Bob owns the host: on deploys he may not decide his own agent's approvals.
    ownerOf: () => 'U0BOB',
    groups: {
      members: async (group) => {
        asked.push(group);
        return new Set(group === 'S0SRE' ? ['U0SAM'] : []);
      },
    },
    logger: captureLogger().logger,
  });
  const grant = (route: string, grantedBy = 'U0GRANTER') => ({ grantedBy, route });

  it('follows the route rules: approvers, group members, admins; the granter without asking Slack', async () => {
    asked.length = 0;
    expect(await authorizer.mayRevoke('U0GRANTER', grant('deploys'))).toEqual({
      allowed: true,
      because: 'granter',
    });
    expect(asked).toEqual([]);
    expect(await authorizer.mayRevoke('U0ALICE', grant('deploys'))).toEqual({
      allowed: true,
      because: 'user',
    });
    expect(await authorizer.mayRevoke('U0SAM', grant('deploys'))).toEqual({
      allowed: true,
      because: 'usergroup',
      usergroup: 'S0SRE',
    });
    expect(await authorizer.mayRevoke('U0ADA', grant('deploys'))).toEqual({
      allowed: true,
      because: 'admin',
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

  it('does not apply the owner rule: taking a permission back needs no second person', async () => {
    // Bob is not an approver of deploys; on an open route he may decide, owner or not.
    expect(await authorizer.mayRevoke('U0BOB', grant('open'))).toEqual({ allowed: true, because: 'anyone' });
    expect(await authorizer.decidesOn('U0BOB', 'open')).toBe(true);
  });

  it('leaves a grant of a route no longer configured to its granter and the admins', async () => {
    expect(await authorizer.mayRevoke('U0ALICE', grant('gone'))).toMatchObject({
      allowed: false,
      route: { why: 'routeGone', route: 'gone' },
    });
    expect(await authorizer.mayRevoke('U0ADA', grant('gone'))).toEqual({ allowed: true, because: 'admin' });
    expect(await authorizer.mayRevoke('U0GRANTER', grant('gone'))).toEqual({
      allowed: true,
      because: 'granter',
    });
  });

  it('decidesOn says whether a user may decide a route (the channels their Home lists grants of)', async () => {
    expect(await authorizer.decidesOn('U0ALICE', 'deploys')).toBe(true);
    expect(await authorizer.decidesOn('U0EVE', 'deploys')).toBe(false);
    expect(await authorizer.decidesOn('U0EVE', 'gone')).toBe(false);
    expect(await authorizer.decidesOn('U0ADA', 'gone')).toBe(true);
  });
});
