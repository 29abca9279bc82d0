import { describe, expect, it } from 'vitest';
import type { Route } from '../../../src/domain/route.js';
import { type RouteInput, Router } from '../../../src/routing/router.js';

// One directory has many spellings, and the agent writes the one its request carries: a strict
// workspace route must catch them all, or the agent dodges its approvers by spelling its working
// directory otherwise (docs/routing.md).

const STRICT_FIRST: Route[] = [
  {
    name: 'production',
    channel: 'C0PROD',
    match: { workspaces: ['/srv/prod/**'] },
    approvers: { users: [], usergroups: ['S0SRE'] },
    quorum: 2,
  },
  { name: 'home', channel: 'C0HOME', match: { workspaces: ['/home/**'] } },
  { name: 'dev', channel: 'C0DEV' },
];

function routeOf(workspaceRoot: string | undefined, routes: Route[] = STRICT_FIRST): string {
  const input: RouteInput = { hostId: 'default', tool: 'shell', subjectKind: 'shell', protectedWrite: false };
  return new Router(routes, 'C0FALLBACK').routeFor(
    workspaceRoot === undefined ? input : { ...input, workspaceRoot },
  ).name;
}

describe('Router: a workspace root is read as the directory it names', () => {
  it.each([
    '/srv//prod',
    '//srv/prod',
    '/srv/./prod',
    '/srv/prod/.',
    '/srv/prod/./app',
    '/srv/x/../prod',
    '/srv/prod/a/../../prod',
    '/proc/self/root/srv/prod',
    '/proc/thread-self/root/srv/prod',
    '/proc/1/root/srv/prod',
    '/proc/self/root/proc/self/root/srv/prod',
    '/proc/self/root//srv/prod/',
  ])('routes %j as /srv/prod', (root) => {
    expect(routeOf(root)).toBe('production');
  });

  it.each(['/srv/prod', '/srv/prod/', '/srv/prod//app', '/srv/prod/.git'])(
    'still routes %j to production',
    (root) => {
      expect(routeOf(root)).toBe('production');
    },
  );

  it('still routes other directories by their own spelling', () => {
    expect(routeOf('/home/dev')).toBe('home');
    expect(routeOf('/home/dev/../dev/x')).toBe('home');
    expect(routeOf('/srv/prod-old')).toBe('dev');
    expect(routeOf('/srv/prod/../web')).toBe('dev');
    expect(routeOf('/proc/self/root/srv/web')).toBe('dev');
    expect(routeOf('/')).toBe('dev');
    // Case is read as written (docs/routing.md says what to do on a case-insensitive file system).
    expect(routeOf('/SRV/prod')).toBe('dev');
  });

  it('keeps an unknown workspace out of every workspace route, as before', () => {
    expect(routeOf(undefined)).toBe('dev');
  });

  it.each([
    'srv/prod',
    'prod',
    '.',
    '',
    '~/prod',
    '~',
    '/proc/self/cwd',
    '/proc/1234/cwd/app',
    '/proc/self/root/../cwd',
    '/proc/self/fd/3',
    '/proc',
    '/dev/fd/3',
    '/srv/prod\0',
    '../srv/prod',
  ])(
    'reads %j, which names no directory by its spelling, as possibly any: the first workspace route takes it',
    (root) => {
      expect(routeOf(root)).toBe('production');
    },
  );

  it('lets an earlier route that does not look at the workspace take an unreadable root, as any other', () => {
    const routes: Route[] = [
      { name: 'deploys', channel: 'C0DEPLOY', match: { tools: ['shell'] } },
      ...STRICT_FIRST,
    ];
    expect(routeOf('relative/dir', routes)).toBe('deploys');
  });

  it('still needs the other fields of a workspace route to match an unreadable root', () => {
    const routes: Route[] = [
      { name: 'ci', channel: 'C0CI', match: { hosts: ['ci'], workspaces: ['/srv/**'] } },
      ...STRICT_FIRST,
    ];
    expect(routeOf('~/x', routes)).toBe('production');
  });
});
