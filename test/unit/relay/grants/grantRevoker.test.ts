// GrantRevoker on its own: what one attempt to revoke a grant comes to, with a stub store (what
// get reads, what revoke answers), a stub authorizer and a notice sender that record each call.
// Who may revoke is authorizeRevoke's (mayRevoke.test.ts); here, what the revoker does with it.

import { describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../../../src/domain/audit.js';
import type { RevokeAuthorization, RevokeRefused } from '../../../../src/domain/authorization.js';
import type { Grant } from '../../../../src/domain/grants/grant.js';
import type { RevokeVia } from '../../../../src/domain/grants/revocation.js';
import { GrantRevoker } from '../../../../src/relay/grants/grantRevoker.js';
import { captureLogger } from '../../../support/logCapture.js';

const NOW = new Date('2026-12-01T12:00:00.000Z');
const GRANT_ID = '0123456789-abcdef012345';

function grant(overrides: Partial<Grant> = {}): Grant {
  return {
    grantId: GRANT_ID,
    caller: 'host:main',
    tool: 'bash',
    capabilities: ['exec:make deploy'],
    sandboxMode: 'workspace-write',
    route: 'deploys',
    holder: 'bot',
    grantedBy: 'U0ALICE',
    approvalId: 'a-1',
    hostId: 'main',
    channel: 'C0DEPLOYS',
    createdAt: '2026-12-01T10:00:00.000Z',
    expiresAt: '2026-12-01T18:00:00.000Z',
    uses: 2,
    ...overrides,
  };
}

const REFUSED: RevokeRefused = {
  allowed: false,
  grantedBy: 'U0ALICE',
  route: {
    allowed: false,
    why: 'notApprover',
    route: 'deploys',
    approvers: { users: ['U0ALICE'], usergroups: ['S0SRE'] },
    protectedWrite: false,
  },
};

interface Setup {
  /** What each get() reads, in turn; the last one again once they run out. */
  reads: Array<Grant | undefined>;
  may?: RevokeAuthorization;
  /** What the store's revoke answers. */
  revokes?: boolean;
  noticeFails?: boolean;
  auditFails?: boolean;
  withoutAudit?: boolean;
}

function revokerWith(setup: Setup) {
  const calls = {
    get: [] as string[],
    revoke: [] as Array<{ grantId: string; by: string; at: Date }>,
    mayRevoke: [] as Array<{ userId: string; grant: Grant }>,
    notices: [] as Array<{ grant: Grant; by: string }>,
    audit: [] as AuditEntry[],
  };
  const { logger, lines } = captureLogger();
  const revoker = new GrantRevoker({
    grants: {
      async get(grantId) {
        calls.get.push(grantId);
        return setup.reads[Math.min(calls.get.length, setup.reads.length) - 1];
      },
      async revoke(grantId, by, at) {
        calls.revoke.push({ grantId, by, at });
        return setup.revokes ?? true;
      },
    },
    authorizer: {
      async mayRevoke(userId, g) {
        calls.mayRevoke.push({ userId, grant: g });
        return setup.may ?? { allowed: true, because: 'user' };
      },
    },
    notices: {
      async grantRevoked(g, by) {
        calls.notices.push({ grant: g, by });
        if (setup.noticeFails) throw new Error('channel_not_found');
      },
    },
    ...(setup.withoutAudit
      ? {}
      : {
          audit: {
            async append(entry: AuditEntry) {
              calls.audit.push(entry);
              if (setup.auditFails) throw new Error('audit stream unavailable');
            },
          },
        }),
    logger,
    now: () => NOW,
  });
  return { revoker, calls, lines };
}

describe('GrantRevoker', () => {
  it('unknown: no such grant; nobody is asked and nothing is revoked', async () => {
    const { revoker, calls } = revokerWith({ reads: [undefined] });
    expect(await revoker.revoke(GRANT_ID, 'U0BOB', 'command')).toEqual({
      kind: 'unknown',
      grantId: GRANT_ID,
    });
    expect(calls.get).toEqual([GRANT_ID]);
    expect(calls.mayRevoke).toEqual([]);
    expect(calls.revoke).toEqual([]);
    expect(calls.notices).toEqual([]);
  });

  it('expired: a grant whose end has come, to the millisecond, is not revoked', async () => {
    for (const expiresAt of [NOW.toISOString(), '2026-12-01T11:59:59.999Z']) {
      const ended = grant({ expiresAt });
      const { revoker, calls } = revokerWith({ reads: [ended] });
      expect(await revoker.revoke(GRANT_ID, 'U0ALICE', 'command')).toEqual({ kind: 'expired', grant: ended });
      expect(calls.mayRevoke).toHaveLength(1);
      expect(calls.revoke).toEqual([]);
    }
    // A millisecond before its end it is still live, and revoked.
    const live = grant({ expiresAt: '2026-12-01T12:00:00.001Z' });
    const { revoker } = revokerWith({ reads: [live] });
    expect((await revoker.revoke(GRANT_ID, 'U0ALICE', 'command')).kind).toBe('revoked');
  });

  it('alreadyRevoked: a revoked grant (a replaced one too) is left as it is', async () => {
    for (const revoked of [
      grant({ revokedAt: '2026-12-01T11:00:00.000Z', revokedBy: 'U0CAROL' }),
      grant({ revokedAt: '2026-12-01T11:00:00.000Z', revokedBy: 'U0BOB', replacedBy: '0123456789-next' }),
    ]) {
      const { revoker, calls } = revokerWith({ reads: [revoked] });
      expect(await revoker.revoke(GRANT_ID, 'U0ALICE', 'button')).toEqual({
        kind: 'alreadyRevoked',
        grant: revoked,
      });
      expect(calls.mayRevoke).toHaveLength(1);
      expect(calls.revoke).toEqual([]);
      expect(calls.notices).toEqual([]);
    }
  });

  it('spent: a grant by uses whose every use was counted is not revoked, nor said to be', async () => {
    const spent = grant({ maxUses: 2, usesLeft: 0, uses: 2, lastUsedAt: '2026-12-01T11:30:00.000Z' });
    const { revoker, calls } = revokerWith({ reads: [spent] });
    expect(await revoker.revoke(GRANT_ID, 'U0ALICE', 'command')).toEqual({ kind: 'spent', grant: spent });
    expect(calls.mayRevoke).toHaveLength(1);
    expect(calls.revoke).toEqual([]);
    expect(calls.notices).toEqual([]);
    // Its last use still out (taken, not counted): it may come back, so it is revoked.
    const out = grant({ maxUses: 2, usesLeft: 0, uses: 1 });
    const racing = revokerWith({ reads: [out] });
    expect((await racing.revoker.revoke(GRANT_ID, 'U0ALICE', 'command')).kind).toBe('revoked');
    expect(racing.calls.revoke).toHaveLength(1);
  });

  it('hostHeld: the host keeps its own rule; the store is not touched, whoever asks', async () => {
    const kept = grant({ holder: 'host', expiresAt: undefined, rulePreview: 'allow make deploy' });
    const { revoker, calls } = revokerWith({ reads: [kept], may: { allowed: true, because: 'admin' } });
    expect(await revoker.revoke(GRANT_ID, 'U0ADA', 'command')).toEqual({ kind: 'hostHeld', grant: kept });
    expect(calls.revoke).toEqual([]);
    expect(calls.notices).toEqual([]);
  });

  it.each([
    ['command', 'command'],
    ['button', 'revokeButton'],
  ] as const)(
    'refused (via %s): nothing is revoked or posted; the refusal is audited and logged',
    async (via: RevokeVia, action) => {
      const target = grant();
      const { revoker, calls, lines } = revokerWith({ reads: [target], may: REFUSED });
      // Nothing of the grant in what the Slack side answers with: only the id they gave.
      expect(await revoker.revoke(GRANT_ID, 'U0EVE', via)).toEqual({ kind: 'refused', grantId: GRANT_ID });
      expect(calls.mayRevoke).toEqual([{ userId: 'U0EVE', grant: target }]);
      expect(calls.revoke).toEqual([]);
      expect(calls.notices).toEqual([]);
      const entry = {
        kind: 'refusal',
        approvalId: 'a-1',
        hostId: 'main',
        route: 'deploys',
        userId: 'U0EVE',
        grantId: GRANT_ID,
        action,
        reason: 'notApprover',
        at: NOW.toISOString(),
      };
      expect(calls.audit).toEqual([entry]);
      expect(lines.filter((l) => String(l.msg).startsWith('grant revoke refused'))).toEqual([
        expect.objectContaining({ level: 30, ...entry }),
      ]);
    },
  );

  it('refused: the audit reason is why the route refuses them (here: its rules are gone)', async () => {
    const gone: RevokeRefused = {
      allowed: false,
      grantedBy: 'U0ALICE',
      route: { allowed: false, why: 'routeGone', route: 'deploys' },
    };
    const { revoker, calls } = revokerWith({ reads: [grant()], may: gone });
    expect((await revoker.revoke(GRANT_ID, 'U0EVE', 'command')).kind).toBe('refused');
    expect(calls.audit).toEqual([expect.objectContaining({ reason: 'routeGone', userId: 'U0EVE' })]);
  });

  it('refused: an audit trail that fails, or none at all, still refuses, and says what was lost', async () => {
    const failing = revokerWith({ reads: [grant()], may: REFUSED, auditFails: true });
    expect((await failing.revoker.revoke(GRANT_ID, 'U0EVE', 'command')).kind).toBe('refused');
    await expect.poll(() => failing.lines.map((l) => l.msg)).toContain('could not append to the audit trail');
    expect(failing.calls.revoke).toEqual([]);

    const none = revokerWith({ reads: [grant()], may: REFUSED, withoutAudit: true });
    expect((await none.revoker.revoke(GRANT_ID, 'U0EVE', 'command')).kind).toBe('refused');
    expect(none.calls.revoke).toEqual([]);
  });

  it('revoked: the store revokes it as the user, now; the channel is told; the outcome says why they could', async () => {
    const target = grant();
    const { revoker, calls, lines } = revokerWith({
      reads: [target],
      may: { allowed: true, because: 'usergroup', usergroup: 'S0SRE' },
    });
    expect(await revoker.revoke(GRANT_ID, 'U0CAROL', 'button')).toEqual({
      kind: 'revoked',
      grant: target,
      by: 'U0CAROL',
      because: 'usergroup',
    });
    expect(calls.mayRevoke).toEqual([{ userId: 'U0CAROL', grant: target }]);
    expect(calls.revoke).toEqual([{ grantId: GRANT_ID, by: 'U0CAROL', at: NOW }]);
    expect(calls.notices).toEqual([{ grant: target, by: 'U0CAROL' }]);
    expect(calls.audit).toEqual([]);
    expect(lines.find((l) => l.msg === 'grant revoked')).toMatchObject({
      grantId: GRANT_ID,
      userId: 'U0CAROL',
      via: 'button',
      because: 'usergroup',
      route: 'deploys',
    });
  });

  it('refused: one who may not revoke it learns nothing of whether it expired, was revoked or what the host keeps', async () => {
    for (const target of [
      grant({ expiresAt: NOW.toISOString() }),
      grant({ revokedAt: '2026-12-01T11:00:00.000Z', revokedBy: 'U0CAROL' }),
      grant({ holder: 'host', expiresAt: undefined, rulePreview: 'allow make deploy' }),
    ]) {
      const { revoker, calls } = revokerWith({ reads: [target], may: REFUSED });
      expect(await revoker.revoke(GRANT_ID, 'U0EVE', 'command')).toEqual({
        kind: 'refused',
        grantId: GRANT_ID,
      });
      expect(calls.revoke).toEqual([]);
    }
  });

  it('a notice that fails still leaves it revoked, and is logged', async () => {
    const { revoker, calls, lines } = revokerWith({ reads: [grant()], noticeFails: true });
    expect((await revoker.revoke(GRANT_ID, 'U0ALICE', 'command')).kind).toBe('revoked');
    expect(calls.revoke).toHaveLength(1);
    expect(calls.notices).toHaveLength(1);
    expect(lines.find((l) => l.msg === 'could not announce a revoked grant')).toMatchObject({
      level: 40,
      grantId: GRANT_ID,
      channel: 'C0DEPLOYS',
    });
  });

  describe('a revoke that loses a race (the store answers false): it says what it finds on a fresh read', () => {
    it('revoked by someone else meanwhile: alreadyRevoked, with who did it', async () => {
      const meanwhile = grant({ revokedAt: NOW.toISOString(), revokedBy: 'U0CAROL' });
      const { revoker, calls } = revokerWith({ reads: [grant(), meanwhile], revokes: false });
      expect(await revoker.revoke(GRANT_ID, 'U0ALICE', 'command')).toEqual({
        kind: 'alreadyRevoked',
        grant: meanwhile,
      });
      expect(calls.get).toEqual([GRANT_ID, GRANT_ID]);
      expect(calls.notices).toEqual([]);
    });

    it('expired meanwhile: expired', async () => {
      const ended = grant({ expiresAt: NOW.toISOString() });
      const { revoker, calls } = revokerWith({ reads: [grant(), ended], revokes: false });
      expect(await revoker.revoke(GRANT_ID, 'U0ALICE', 'command')).toEqual({ kind: 'expired', grant: ended });
      expect(calls.notices).toEqual([]);
    });

    it('swept meanwhile: unknown', async () => {
      const { revoker } = revokerWith({ reads: [grant(), undefined], revokes: false });
      expect(await revoker.revoke(GRANT_ID, 'U0ALICE', 'command')).toEqual({
        kind: 'unknown',
        grantId: GRANT_ID,
      });
    });

    it('its last use counted meanwhile: spent, never "already revoked"', async () => {
      const spent = grant({ maxUses: 1, usesLeft: 0, uses: 1 });
      const { revoker, calls } = revokerWith({
        reads: [grant({ maxUses: 1, usesLeft: 1, uses: 0 }), spent],
        revokes: false,
      });
      expect(await revoker.revoke(GRANT_ID, 'U0ALICE', 'command')).toEqual({ kind: 'spent', grant: spent });
      expect(calls.get).toEqual([GRANT_ID, GRANT_ID]);
      expect(calls.notices).toEqual([]);
    });

    it('still reading as live (no end it can name): alreadyRevoked, never revoked', async () => {
      const target = grant();
      const { revoker, calls } = revokerWith({ reads: [target, grant({ usesLeft: 0 })], revokes: false });
      expect(await revoker.revoke(GRANT_ID, 'U0ALICE', 'command')).toEqual({
        kind: 'alreadyRevoked',
        grant: target,
      });
      expect(calls.notices).toEqual([]);
    });
  });
});
