// Records and grants keep a route by its name: an unnamed route's must not come to name another
// route once the file changes (a route added above it, say) and the bot restarts.

import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { Grant } from '../../../src/domain/grants/grant.js';
import { findGrant, grantQuestion } from '../../../src/domain/grants/match.js';
import type { Route } from '../../../src/domain/route.js';
import { Authorizer, routeInputOf } from '../../../src/relay/deciding/authorizer.js';
import { type RouteInput, Router } from '../../../src/routing/router.js';
import { sampleRecord } from '../../support/sampleRecord.js';

const NOW = new Date('2026-11-30T10:05:00.000Z');

function authorizerOf(router: Router, admins: string[] = []): Authorizer {
  return new Authorizer({
    routeOf: (route) => router.named(route),
    placeNow: (record) => router.placeNow(routeInputOf(record)),
    admins,
    ownerOf: () => 'U0OWNER',
    groups: { members: async () => new Set() },
    people: { person: async () => ({ teamId: 'T1', guest: false }) },
    channels: { members: async () => new Set(['U0OWNER', 'U0INTERN', 'U0SRE', 'U0ADMIN']) },
    workspace: () => ({ teamId: 'T1' }),
    logger: pino({ level: 'silent' }),
  });
}

const prod: Route = {
  channel: 'C0PROD',
  match: { workspaces: ['/srv/prod/**'] },
  approvers: { users: ['U0SRE'], usergroups: [] },
  allowSelfApproval: false,
};
const sandbox: Route = { channel: 'C0SANDBOX', match: { workspaces: ['/srv/sandbox/**'] } };
const docs: Route = { channel: 'C0DOCS', match: { tools: ['docs'] } };

const input = (workspaceRoot: string): RouteInput => ({
  hostId: 'default',
  tool: 'write_file',
  workspaceRoot,
  subjectKind: 'fileAccess',
  protectedWrite: false,
});

/** A pending record as `router` placed it, as the store keeps it across a restart. */
function placed(router: Router, workspaceRoot: string, id = 'a-1') {
  const route = router.routeFor(input(workspaceRoot));
  return sampleRecord(id, { route: route.name, slack: { channel: route.channel, ts: '1.1' } });
}

/** The grant "don't ask again" would store for `record`'s request. */
function grantFor(record: ReturnType<typeof sampleRecord>): Grant {
  const question = grantQuestion(record)!;
  return {
    grantId: 'g-1',
    holder: 'bot',
    grantedBy: 'U0INTERN',
    approvalId: record.approvalId,
    hostId: record.hostId,
    channel: record.slack.channel!,
    createdAt: '2026-11-30T10:00:00.000Z',
    expiresAt: '2026-11-30T18:00:00.000Z',
    uses: 0,
    caller: question.caller,
    tool: question.tool,
    capabilities: question.capabilities,
    sandboxMode: question.sandboxMode,
    route: question.route,
  };
}

describe('an unnamed route, once a route is added above it', () => {
  it('keeps its open approvals: the approvers decide, not the channel, nor the owner', async () => {
    const record = placed(new Router([prod, sandbox], 'C0FALL'), '/srv/prod/app');
    const after = authorizerOf(new Router([docs, prod, sandbox], 'C0FALL'));
    expect(await after.check('U0INTERN', record)).toMatchObject({ allowed: false, why: 'notApprover' });
    expect(await after.check('U0OWNER', record)).toMatchObject({ allowed: false });
    expect(await after.check('U0SRE', record)).toMatchObject({ allowed: true });
  });

  it('keeps its grants: one made on sandbox never answers a prod request', () => {
    const grant = grantFor(placed(new Router([prod, sandbox], 'C0FALL'), '/srv/sandbox/app'));
    const after = new Router([docs, prod, sandbox], 'C0FALL');
    const prodRequest = grantQuestion(placed(after, '/srv/prod/app', 'a-2'))!;
    expect(findGrant([grant], prodRequest, NOW)).toBeUndefined();
    // It still answers what sandbox places, wherever sandbox now stands.
    const sandboxRequest = grantQuestion(placed(after, '/srv/sandbox/app', 'a-3'))!;
    expect(findGrant([grant], sandboxRequest, NOW)).toBe(grant);
  });
});

describe('an unnamed route changed or removed', () => {
  it('leaves its open approvals to admins, as a route gone from the file', async () => {
    const record = placed(new Router([prod, sandbox], 'C0FALL'), '/srv/sandbox/app');
    const changed = { ...sandbox, approvers: { users: ['U0SRE'], usergroups: [] } };
    const after = authorizerOf(new Router([changed, prod], 'C0FALL'), ['U0ADMIN']);
    expect(await after.check('U0INTERN', record)).toMatchObject({ allowed: false, why: 'routeGone' });
    expect(await after.check('U0ADMIN', record)).toMatchObject({ allowed: true });
  });

  it('no longer lets its grants answer', () => {
    const grant = grantFor(placed(new Router([sandbox], 'C0FALL'), '/srv/sandbox/app'));
    const after = new Router([{ ...sandbox, quorum: 2 }], 'C0FALL');
    const request = placed(after, '/srv/sandbox/app', 'a-2');
    expect(after.grantsOf(grant.route)).toBeUndefined();
    expect(findGrant([grant], grantQuestion(request)!, NOW)).toBeUndefined();
  });
});

describe('a named route whose channel changed', () => {
  // Who may see and revoke a grant is read on the channel it was made in: answering in another,
  // it would decide for people who can neither list nor revoke it there.
  it('no longer lets its grants answer: a grant answers only where it is listed and revoked', () => {
    const named: Route = { ...sandbox, name: 'sandbox' };
    const grant = grantFor(placed(new Router([named], 'C0FALL'), '/srv/sandbox/app'));
    expect(grant.channel).toBe('C0SANDBOX');
    const moved = new Router([{ ...named, channel: 'C0SANDBOX2' }], 'C0FALL');
    const request = placed(moved, '/srv/sandbox/app', 'a-2');
    expect(request.route).toBe(grant.route);
    expect(findGrant([grant], grantQuestion(request)!, NOW)).toBeUndefined();
    // Where it was made, it still answers.
    const before = placed(new Router([named], 'C0FALL'), '/srv/sandbox/app', 'a-3');
    expect(findGrant([grant], grantQuestion(before)!, NOW)).toBe(grant);
  });
});
