import { describe, expect, it } from 'vitest';
import type { Route } from '../../../src/domain/route.js';
import { FALLBACK_ROUTE_NAME, type RouteInput, Router } from '../../../src/routing/router.js';

const FALLBACK = 'C0FALLBACK';
const SHELL: RouteInput = { hostId: 'default', tool: 'shell', subjectKind: 'shell', protectedWrite: false };

function channelFor(routes: Route[], input: Partial<RouteInput>): string {
  return new Router(routes, FALLBACK).channelFor({
    hostId: 'default',
    tool: 'shell',
    subjectKind: 'shell',
    protectedWrite: false,
    ...input,
  });
}

describe('Router', () => {
  it('uses the fallback without routes', () => {
    expect(channelFor([], {})).toBe(FALLBACK);
  });

  it('uses the fallback when no route matches', () => {
    expect(channelFor([{ channel: 'C0CI', match: { hosts: ['ci'] } }], { hostId: 'laptop' })).toBe(FALLBACK);
  });

  it('lets a route without match catch everything', () => {
    expect(channelFor([{ channel: 'C0ALL' }], { hostId: 'any', tool: 'any' })).toBe('C0ALL');
  });

  it('matches hosts exactly', () => {
    const routes: Route[] = [{ channel: 'C0CI', match: { hosts: ['ci', 'build'] } }];
    expect(channelFor(routes, { hostId: 'ci' })).toBe('C0CI');
    expect(channelFor(routes, { hostId: 'build' })).toBe('C0CI');
    expect(channelFor(routes, { hostId: 'ci-2' })).toBe(FALLBACK);
    expect(channelFor(routes, { hostId: 'c*' })).toBe(FALLBACK);
  });

  it('matches tools by glob', () => {
    const routes: Route[] = [{ channel: 'C0WRITE', match: { tools: ['shell', 'write_*'] } }];
    expect(channelFor(routes, { tool: 'shell' })).toBe('C0WRITE');
    expect(channelFor(routes, { tool: 'write_file' })).toBe('C0WRITE');
    expect(channelFor(routes, { tool: 'write_' })).toBe('C0WRITE');
    expect(channelFor(routes, { tool: 'shellx' })).toBe(FALLBACK);
    expect(channelFor(routes, { tool: 'read_file' })).toBe(FALLBACK);
  });

  it('matches workspaces by glob, dot directories included', () => {
    const routes: Route[] = [{ channel: 'C0PAY', match: { workspaces: ['/srv/payments/**'] } }];
    expect(channelFor(routes, { workspaceRoot: '/srv/payments' })).toBe('C0PAY');
    expect(channelFor(routes, { workspaceRoot: '/srv/payments/api/v2' })).toBe('C0PAY');
    expect(channelFor(routes, { workspaceRoot: '/srv/payments/.worktrees/fix' })).toBe('C0PAY');
    expect(channelFor(routes, { workspaceRoot: '/srv/payments-old' })).toBe(FALLBACK);
    expect(channelFor(routes, { workspaceRoot: '/srv/web' })).toBe(FALLBACK);
  });

  it('reads workspaces and tools as written, case too: either side of first-match could be the looser', () => {
    // docs/routing.md: on a case-insensitive file system `/SRV/PAYMENTS` goes on to a later route.
    const routes: Route[] = [
      { channel: 'C0PAY', match: { workspaces: ['/srv/payments/**'] } },
      { channel: 'C0DEPLOY', match: { tools: ['deploy_*'] } },
    ];
    expect(channelFor(routes, { workspaceRoot: '/SRV/Payments/api' })).toBe(FALLBACK);
    expect(channelFor(routes, { tool: 'Deploy_prod' })).toBe(FALLBACK);
  });

  it('never matches a workspace route when the workspace is unknown', () => {
    const routes: Route[] = [{ channel: 'C0ANY', match: { workspaces: ['**'] } }];
    expect(channelFor(routes, { workspaceRoot: '/anything' })).toBe('C0ANY');
    expect(channelFor(routes, {})).toBe(FALLBACK);
  });

  it('needs every listed field to match', () => {
    const routes: Route[] = [
      { channel: 'C0BOTH', match: { hosts: ['ci'], tools: ['shell'], workspaces: ['/srv/**'] } },
    ];
    expect(channelFor(routes, { hostId: 'ci', tool: 'shell', workspaceRoot: '/srv/a' })).toBe('C0BOTH');
    expect(channelFor(routes, { hostId: 'dev', tool: 'shell', workspaceRoot: '/srv/a' })).toBe(FALLBACK);
    expect(channelFor(routes, { hostId: 'ci', tool: 'write', workspaceRoot: '/srv/a' })).toBe(FALLBACK);
    expect(channelFor(routes, { hostId: 'ci', tool: 'shell', workspaceRoot: '/home/a' })).toBe(FALLBACK);
    expect(channelFor(routes, { hostId: 'ci', tool: 'shell' })).toBe(FALLBACK);
  });

  it('takes the first matching route', () => {
    const routes: Route[] = [
      { name: 'payments', channel: 'C0PAY', match: { workspaces: ['/srv/payments/**'] } },
      { name: 'shell', channel: 'C0SHELL', match: { tools: ['shell'] } },
      { name: 'rest', channel: 'C0REST' },
      { name: 'unreachable', channel: 'C0NEVER', match: { tools: ['write_*'] } },
    ];
    expect(channelFor(routes, { tool: 'shell', workspaceRoot: '/srv/payments/x' })).toBe('C0PAY');
    expect(channelFor(routes, { tool: 'shell', workspaceRoot: '/srv/web' })).toBe('C0SHELL');
    expect(channelFor(routes, { tool: 'write_file', workspaceRoot: '/srv/web' })).toBe('C0REST');
  });
});

describe('Router.routeFor', () => {
  it('names the route that matched, by its name or a digest of its definition', () => {
    const routes: Route[] = [
      { name: 'ci', channel: 'C0CI', match: { hosts: ['ci'] } },
      { channel: 'C0WRITE', match: { tools: ['write_*'] } },
    ];
    const router = new Router(routes, FALLBACK);
    expect(router.routeFor({ ...SHELL, hostId: 'ci' })).toEqual({ name: 'ci', channel: 'C0CI' });
    const unnamed = router.routeFor({ ...SHELL, hostId: 'x', tool: 'write_file' });
    expect(unnamed).toEqual({ name: expect.stringMatching(/^unnamed-[0-9a-f]{8}$/), channel: 'C0WRITE' });
    // Not its place: first in another file, keys in another order, it is still the same route.
    const moved = new Router([{ match: { tools: ['write_*'] }, channel: 'C0WRITE' }], FALLBACK);
    expect(moved.routeFor({ ...SHELL, tool: 'write_file' }).name).toBe(unnamed.name);
    const changed = new Router([{ channel: 'C0WRITE', match: { tools: ['write_*'] }, quorum: 2 }], FALLBACK);
    expect(changed.routeFor({ ...SHELL, tool: 'write_file' }).name).not.toBe(unnamed.name);
    expect(router.routeFor({ ...SHELL, hostId: 'x' })).toEqual({
      name: FALLBACK_ROUTE_NAME,
      channel: FALLBACK,
    });
  });
});

describe('Router: session titles, subject kinds and protected writes', () => {
  it('matches session titles by glob, across "/" and ignoring case; no title never matches', () => {
    const routes: Route[] = [{ channel: 'C0DEPLOYS', match: { sessionTitles: ['*deploy*'] } }];
    expect(channelFor(routes, { sessionTitle: 'Deploy api/v2 to prod' })).toBe('C0DEPLOYS');
    expect(channelFor(routes, { sessionTitle: 'fix flaky test' })).toBe(FALLBACK);
    expect(channelFor(routes, {})).toBe(FALLBACK);
  });

  it('matches subject kinds exactly', () => {
    const routes: Route[] = [{ channel: 'C0NET', match: { subjects: ['network', 'unixSocket'] } }];
    expect(channelFor(routes, { subjectKind: 'network' })).toBe('C0NET');
    expect(channelFor(routes, { subjectKind: 'unixSocket' })).toBe('C0NET');
    expect(channelFor(routes, { subjectKind: 'shell' })).toBe(FALLBACK);
    expect(channelFor(routes, { subjectKind: 'net' })).toBe(FALLBACK);
  });

  it('matches protectedWrite true and false', () => {
    const routes: Route[] = [
      { channel: 'C0PROTECTED', match: { protectedWrite: true } },
      { channel: 'C0PLAIN', match: { protectedWrite: false, tools: ['write_*'] } },
    ];
    expect(channelFor(routes, { tool: 'write_file', protectedWrite: true })).toBe('C0PROTECTED');
    expect(channelFor(routes, { tool: 'write_file', protectedWrite: false })).toBe('C0PLAIN');
    expect(channelFor(routes, { tool: 'shell', protectedWrite: false })).toBe(FALLBACK);
  });

  it('takes the first matching route when several match', () => {
    const routes: Route[] = [
      { name: 'deploys', channel: 'C0DEPLOYS', match: { sessionTitles: ['*deploy*'], subjects: ['shell'] } },
      { name: 'shell', channel: 'C0SHELL', match: { subjects: ['shell'] } },
      { name: 'default', channel: 'C0ALL' },
    ];
    const router = new Router(routes, FALLBACK);
    expect(router.routeFor({ ...SHELL, sessionTitle: 'deploy web' }).name).toBe('deploys');
    expect(router.routeFor({ ...SHELL, sessionTitle: 'refactor' }).name).toBe('shell');
    expect(router.routeFor({ ...SHELL, subjectKind: 'fileAccess', sessionTitle: 'deploy web' }).name).toBe(
      'default',
    );
  });

  it("gives a record's route its rules; the fallback is open; a route no longer configured has none", () => {
    const router = new Router(
      [
        {
          name: 'deploys',
          channel: 'C0DEPLOYS',
          approvers: { users: ['U0ALICE'], usergroups: [] },
          allowSelfApproval: false,
        },
        { name: 'default', channel: 'C0ALL' },
      ],
      FALLBACK,
    );
    expect(router.rulesOf('deploys')).toMatchObject({
      approvers: { users: ['U0ALICE'] },
      allowSelfApproval: false,
    });
    expect(router.rulesOf('default')).toEqual({
      allowSelfApproval: true,
      rejectReason: 'optional',
      quickReasons: [],
      quorum: 1,
      allowExternal: false,
      allowGuests: false,
    });
    expect(router.rulesOf(FALLBACK_ROUTE_NAME)?.approvers).toBeUndefined();
    expect(router.rulesOf(undefined)?.approvers).toBeUndefined();
    expect(router.rulesOf('renamed')).toBeUndefined();
    expect(router.openRoutes()).toEqual(['default']);
    const protectedOnly = new Router(
      [{ name: 'pw', channel: 'C0PW', protectedWriteApprovers: { users: ['U0BOB'], usergroups: [] } }],
      FALLBACK,
    );
    // Its approvals that are not protected writes are open to anyone: it is warned about too.
    expect(protectedOnly.openRoutes()).toEqual(['pw']);
    expect(protectedOnly.namesApprovers()).toBe(true);
    // Without a catch-all route, a card may go to the fallback (SLACK_CHANNEL), whose members decide.
    const scoped = new Router(
      [
        {
          name: 'ci',
          channel: 'C0CI',
          match: { hosts: ['ci'] },
          approvers: { users: ['U0ALICE'], usergroups: [] },
        },
      ],
      FALLBACK,
    );
    expect(scoped.openRoutes()).toEqual([FALLBACK_ROUTE_NAME]);
    expect(scoped.namesApprovers()).toBe(true);
    expect(new Router([{ name: 'all', channel: 'C0ALL' }], FALLBACK).namesApprovers()).toBe(false);
  });
});

describe('Router.grantsOf', () => {
  const env = { enabled: true, caller: 'session' as const, ttlMs: 8 * 3_600_000, maxTtlMs: 7 * 86_400_000 };
  const DEFAULT_CHOICES = [
    { kind: 'time', ms: 3_600_000 },
    { kind: 'time', ms: 8 * 3_600_000 },
    { kind: 'session' },
  ];

  it("fills what a route leaves out from the environment's settings", () => {
    const router = new Router(
      [
        { name: 'deploys', channel: 'C0DEPLOYS', grants: { enabled: false } },
        { name: 'ci', channel: 'C0CI', grants: { ttlMs: 60_000, caller: 'host' } },
      ],
      FALLBACK,
      env,
    );
    expect(router.grantsOf('deploys')).toEqual({ ...env, choices: DEFAULT_CHOICES, enabled: false });
    // Choices left out follow the route's ttl: an hour, that ttl, and the session.
    expect(router.grantsOf('ci')).toEqual({
      ...env,
      ttlMs: 60_000,
      caller: 'host',
      choices: [{ kind: 'time', ms: 60_000 }, { kind: 'time', ms: 3_600_000 }, { kind: 'session' }],
    });
    expect(router.grantsOf(FALLBACK_ROUTE_NAME)).toEqual({ ...env, choices: DEFAULT_CHOICES });
  });

  it('offers 1 h, 8 h and the session by default, and a route’s own choices as given', () => {
    const choices = [{ kind: 'uses' as const, uses: 10 }, { kind: 'session' as const }];
    const router = new Router([{ name: 'counted', channel: 'C0C', grants: { choices } }], FALLBACK, env);
    expect(router.grantsOf(FALLBACK_ROUTE_NAME)?.choices).toEqual([
      { kind: 'time', ms: 3_600_000 },
      { kind: 'time', ms: 8 * 3_600_000 },
      { kind: 'session' },
    ]);
    expect(router.grantsOf('counted')?.choices).toEqual(choices);
    // A default duration beyond the route's maximum is left out.
    const short = new Router([{ name: 's', channel: 'C0S', grants: { maxTtlMs: 1_800_000 } }], FALLBACK, env);
    expect(short.grantsOf('s')?.choices).toEqual([{ kind: 'time', ms: 1_800_000 }, { kind: 'session' }]);
  });

  it('caps a ttl left to the environment by the route’s own maximum', () => {
    const router = new Router(
      [{ name: 'short', channel: 'C0S', grants: { maxTtlMs: 3_600_000 } }],
      FALLBACK,
      env,
    );
    expect(router.grantsOf('short')).toMatchObject({ ttlMs: 3_600_000, maxTtlMs: 3_600_000 });
  });

  it('gives no grants for a route no longer in the file', () => {
    expect(new Router([], FALLBACK, env).grantsOf('renamed')).toBeUndefined();
  });
});
