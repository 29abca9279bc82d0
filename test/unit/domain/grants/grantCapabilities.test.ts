import { describe, expect, it } from 'vitest';
import {
  type CapabilityRequest,
  canonicalCapabilities,
  covers,
  stageCapabilities,
} from '../../../../src/domain/grants/capabilities.js';
import type { Grant } from '../../../../src/domain/grants/grant.js';
import {
  callerFor,
  findGrant,
  type GrantQuestion,
  grantQuestion,
  onceChoice,
} from '../../../../src/domain/grants/match.js';
import type { ApprovalChoice, ApprovalSubject } from '../../../../src/msp/protocol.js';

const REQ = { approvalId: 'a1', sourceIndex: 0 };

function request(subject: ApprovalSubject, extra: Partial<CapabilityRequest> = {}): CapabilityRequest {
  return { tool: 'bash', subject, currentRequirementId: REQ, protectedWrite: false, ...extra };
}

function stage(sourceIndex: number, argv: string[], argvComplete: boolean | 'absent' = true) {
  return {
    requirementId: { approvalId: 'a1', sourceIndex },
    position: sourceIndex + 1,
    totalStages: 2,
    argv,
    ...(argvComplete === 'absent' ? {} : { argvComplete }),
    resolution: { kind: 'unresolved' },
  };
}

const shell = (stages = [stage(0, ['git', 'push']), stage(1, ['npm', 'test'])]): ApprovalSubject => ({
  kind: 'shell',
  command: 'git push && npm test',
  workspaceRoot: '/srv/repo',
  stages,
});

const caps = (subject: ApprovalSubject, extra: Partial<CapabilityRequest> = {}) =>
  stageCapabilities(request(subject, extra));

describe('stageCapabilities: one canonical capability per subject kind (docs/grants.md)', () => {
  it('takes the exec capability of the stage being asked, words joined by single spaces', () => {
    expect(caps(shell())).toEqual({ capabilities: ['exec:git push', 'in:/srv/repo'] });
    expect(caps(shell(), { currentRequirementId: { approvalId: 'a1', sourceIndex: 1 } })).toEqual({
      capabilities: ['exec:npm test', 'in:/srv/repo'],
    });
  });

  it('quotes a word with a space or quote, so that different argv never read the same', () => {
    const oneWord = caps(shell([stage(0, ['rm', '-rf /'])])).capabilities;
    const twoWords = caps(shell([stage(0, ['rm', '-rf', '/'])])).capabilities;
    expect(oneWord).toEqual(['exec:rm "-rf /"', 'in:/srv/repo']);
    expect(twoWords).toEqual(['exec:rm -rf /', 'in:/srv/repo']);
    expect(oneWord).not.toEqual(twoWords);
  });

  it('never makes an exec capability of a stage the host could not parse (argvComplete false or absent)', () => {
    expect(caps(shell([stage(0, ['echo $(cat /etc/passwd)'], false)]))).toEqual({
      capabilities: [],
      notGrantable: 'a command that could not be parsed',
    });
    expect(caps(shell([stage(0, ['ls'], 'absent')])).notGrantable).toBeDefined();
  });

  it('is not grantable when no stage is the current requirement', () => {
    expect(caps(shell(), { currentRequirementId: { approvalId: 'a1', sourceIndex: 7 } }).notGrantable).toBe(
      'no stage for the current requirement',
    );
  });

  it('derives file capabilities from canonical absolute paths, as sent, read and write apart', () => {
    expect(caps({ kind: 'fileAccess', access: 'write', path: '/srv/repo/src/app.ts' })).toEqual({
      capabilities: ['file-write:/srv/repo/src/app.ts'],
    });
    expect(caps({ kind: 'fileAccess', access: 'read', path: '/srv/repo' })).toEqual({
      capabilities: ['file-read:/srv/repo'],
    });
    // Names that merely start or end with dots are names, not traversal.
    expect(caps({ kind: 'fileAccess', access: 'read', path: '/srv/repo/.env' }).capabilities).toEqual([
      'file-read:/srv/repo/.env',
    ]);
    expect(caps({ kind: 'fileAccess', access: 'read', path: '/srv/a..b/...' }).capabilities).toEqual([
      'file-read:/srv/a..b/...',
    ]);
    expect(caps({ kind: 'fileAccess', access: 'read', path: '/' }).capabilities).toEqual(['file-read:/']);
  });

  it('never grants a path with a . or .. segment: only the filesystem knows where it leads', () => {
    // /srv/repo/link/../notes.txt is the link target's sibling when link is a symlink: resolving
    // `..` by hand would name /srv/repo/notes.txt, another file than the kernel writes.
    for (const path of [
      '/srv/repo/link/../notes.txt',
      '/srv/repo/../../etc/passwd',
      '/srv/repo/..',
      '/..',
      '/srv/repo/./app.ts',
      '/srv/repo/.',
      '/./srv',
    ]) {
      for (const access of ['read', 'write'] as const) {
        const result = caps({ kind: 'fileAccess', access, path });
        expect(result, path).toEqual({ capabilities: [], notGrantable: 'a path with a . or .. segment' });
        expect(covers([`file-${access}:/srv/repo/notes.txt`], result.capabilities)).toBe(false);
      }
    }
  });

  it('never grants a path with // or a trailing /: the capability is the path as sent, or none', () => {
    for (const path of ['/srv/repo//src/app.ts', '//srv/repo', '/srv/repo/', '/srv/repo/notes.txt/']) {
      expect(caps({ kind: 'fileAccess', access: 'write', path }), path).toEqual({
        capabilities: [],
        notGrantable: 'a path with // or a trailing /',
      });
    }
  });

  it('never grants a path through /proc or /dev/fd: it names another path, or whatever a process holds', () => {
    for (const path of [
      '/proc/self/root/srv/repo/notes.txt',
      '/proc/1/cwd/notes.txt',
      '/proc/self/fd/3',
      '/dev/fd/3',
    ]) {
      expect(caps({ kind: 'fileAccess', access: 'read', path }), path).toEqual({
        capabilities: [],
        notGrantable: 'a path through /proc or /dev/fd',
      });
    }
    expect(caps({ kind: 'unixSocket', path: '/proc/self/root/run/docker.sock' }).notGrantable).toBe(
      'a socket path through /proc or /dev/fd',
    );
  });

  it('is not grantable for a relative path or one holding a NUL', () => {
    expect(caps({ kind: 'fileAccess', access: 'write', path: 'src/app.ts' }).notGrantable).toBe(
      'a path that is not absolute',
    );
    expect(caps({ kind: 'fileAccess', access: 'write', path: '/srv/a\0b' }).notGrantable).toBeDefined();
    expect(caps({ kind: 'fileAccess', access: 'write', path: '../x' }).notGrantable).toBe(
      'a path that is not absolute',
    );
    expect(caps({ kind: 'fileAccess', access: 'write', path: '' }).notGrantable).toBe(
      'a path that is not absolute',
    );
  });

  it('derives net-connect only with protocol, host and port, host in lower case', () => {
    expect(caps({ kind: 'network', protocol: 'HTTPS', host: 'API.example.com.', port: 443 })).toEqual({
      capabilities: ['net-connect:https://api.example.com:443'],
    });
    expect(caps({ kind: 'network', protocol: 'tcp', host: '::1', port: 5432 }).capabilities).toEqual([
      'net-connect:tcp://[::1]:5432',
    ]);
    expect(caps({ kind: 'network', host: 'example.com', port: 443 }).notGrantable).toBe('no protocol');
    expect(caps({ kind: 'network', protocol: 'https', host: 'example.com' }).notGrantable).toBe('no port');
    expect(caps({ kind: 'network', protocol: 'https', host: 'a@b', port: 1 }).notGrantable).toBe('no host');
  });

  it('derives process, unix-socket and tool capabilities', () => {
    expect(caps({ kind: 'process', target: 'postgres' }).capabilities).toEqual(['process:postgres']);
    expect(caps({ kind: 'unixSocket', path: '/run/docker.sock' }).capabilities).toEqual([
      'unix-socket:/run/docker.sock',
    ]);
    expect(caps({ kind: 'tool', toolName: 'mcp__github__create_pr' }).capabilities).toEqual([
      'tool:mcp__github__create_pr',
    ]);
  });

  it('never grants a socket path that is not canonical, for the same reasons as a file path', () => {
    expect(caps({ kind: 'unixSocket', path: '/run/link/../docker.sock' })).toEqual({
      capabilities: [],
      notGrantable: 'a socket path with a . or .. segment',
    });
    expect(caps({ kind: 'unixSocket', path: '/run//docker.sock' })).toEqual({
      capabilities: [],
      notGrantable: 'a socket path with // or a trailing /',
    });
    expect(caps({ kind: 'unixSocket', path: 'docker.sock' }).notGrantable).toBe(
      'a socket path that is not absolute',
    );
  });

  it('never grants an unknown subject kind', () => {
    expect(caps({ kind: 'computerUseTakeover' })).toEqual({
      capabilities: [],
      notGrantable: 'an unknown subject kind (computerUseTakeover)',
    });
  });

  it('keeps the capabilities but refuses a grant for a protected write, computer-use data, masked, cut or unread text', () => {
    const write: ApprovalSubject = { kind: 'fileAccess', access: 'write', path: '/srv/a' };
    expect(caps(write, { protectedWrite: true })).toEqual({
      capabilities: ['file-write:/srv/a'],
      notGrantable: 'a protected write',
    });
    expect(caps(write, { cuaCardFacts: { data: [{ kind: 'clipboard' }] } }).notGrantable).toBe(
      'computer-use data',
    );
    expect(caps(write, { intake: { maskedSecrets: 1, truncated: false, parts: {} } }).notGrantable).toBe(
      'secrets were masked',
    );
    expect(caps(write, { intake: { maskedSecrets: 0, truncated: true, parts: {} } }).notGrantable).toBe(
      'the request was cut',
    );
    const unread = { maskedSecrets: 0, truncated: false, unreadable: true };
    expect(
      caps(write, { intake: { maskedSecrets: 0, truncated: false, parts: { reason: unread } } }),
    ).toEqual({
      capabilities: ['file-write:/srv/a'],
      notGrantable: 'part of the request could not be read',
    });
  });
});

describe('stageCapabilities of one subject object asked again', () => {
  it('works each subject and stage out once, and tells stages, tools and later checks apart', () => {
    const subject = shell();
    const first = stageCapabilities(request(subject));
    // The same subject object and stage: the same answer, not worked out again.
    expect(stageCapabilities(request(subject)).capabilities).toBe(first.capabilities);
    expect(first.capabilities).toEqual(['exec:git push', 'in:/srv/repo']);
    const next = stageCapabilities(
      request(subject, { currentRequirementId: { approvalId: 'a1', sourceIndex: 1 } }),
    );
    expect(next.capabilities).toEqual(['exec:npm test', 'in:/srv/repo']);
    const tool = { kind: 'tool' } as ApprovalSubject;
    expect(stageCapabilities(request(tool, { tool: 'read' })).capabilities).toEqual(['tool:read']);
    expect(stageCapabilities(request(tool, { tool: 'write' })).capabilities).toEqual(['tool:write']);
    // What is checked beside the subject is checked on every call.
    expect(stageCapabilities(request(subject, { protectedWrite: true })).notGrantable).toBe(
      'a protected write',
    );
  });
});

describe('covers: exact members only', () => {
  it('needs every required capability in the covered set, in any order', () => {
    expect(covers(['exec:npm test', 'exec:git push'], ['exec:git push'])).toBe(true);
    expect(covers(canonicalCapabilities(['b', 'a', 'b']), ['a', 'b'])).toBe(true);
    expect(canonicalCapabilities(['b', 'a', 'b'])).toEqual(['a', 'b']);
  });

  it('does not let an argv prefix cover a longer command, nor the reverse', () => {
    expect(covers(['exec:git push'], ['exec:git push --force'])).toBe(false);
    expect(covers(['exec:git push --force'], ['exec:git push'])).toBe(false);
    expect(covers(['exec:git push origin main'], ['exec:git main push origin'])).toBe(false);
  });

  it('does not let a directory cover what is inside it', () => {
    expect(covers(['file-write:/srv/repo'], ['file-write:/srv/repo/app.ts'])).toBe(false);
  });

  it('never covers an empty request (nothing understood means nothing granted)', () => {
    expect(covers(['exec:ls'], [])).toBe(false);
  });
});

const ONCE: ApprovalChoice = {
  choiceId: 'allow_once',
  label: 'Allow once',
  decision: 'approved',
  scope: 'once',
};
const SESSION: ApprovalChoice = {
  choiceId: 'allow_session',
  label: 'Allow for session',
  decision: 'approvedForSession',
  scope: 'session',
};
const REJECT: ApprovalChoice = { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once' };

const NOW = new Date('2026-12-01T12:00:00Z');

function grant(overrides: Partial<Grant> = {}): Grant {
  return {
    grantId: 'g1',
    holder: 'bot',
    caller: 'session:s1',
    tool: 'bash',
    capabilities: ['exec:git push', 'exec:npm test', 'in:/srv/repo'],
    sandboxMode: 'workspace-write',
    grantedBy: 'U0ALICE',
    approvalId: 'a0',
    hostId: 'main',
    route: 'default',
    channel: 'C0APPROVALS',
    createdAt: '2026-12-01T11:00:00Z',
    expiresAt: '2026-12-01T19:00:00Z',
    uses: 0,
    ...overrides,
  };
}

const question: GrantQuestion = {
  caller: 'session:s1',
  tool: 'bash',
  sandboxMode: 'workspace-write',
  route: 'default',
  capabilities: ['exec:git push', 'in:/srv/repo'],
  once: ONCE,
  sourceIndex: 0,
  hostId: 'main',
  channel: 'C0APPROVALS',
};

describe('grantQuestion and findGrant: every part equal, capabilities a subset', () => {
  const record = {
    ...request(shell()),
    caller: 'session:s1',
    sandboxMode: 'workspace-write',
    route: 'default',
    hostId: 'main',
    slack: { channel: 'C0APPROVALS' },
    availableChoices: [ONCE, SESSION, REJECT],
  };

  it('asks with the caller, tool, sandbox mode, route, the stage capability and the approved-once choice', () => {
    expect(grantQuestion(record)).toEqual(question);
  });

  it('asks for the route a record names, and for the route-less grants of a record that names none', () => {
    expect(grantQuestion({ ...record, route: 'prod' })?.route).toBe('prod');
    expect(grantQuestion({ ...record, route: undefined })?.route).toBe('');
  });

  it('asks nothing when the host offers no approved-once choice, or the request is not grantable', () => {
    expect(grantQuestion({ ...record, availableChoices: [SESSION, REJECT] })).toBeUndefined();
    expect(grantQuestion({ ...record, protectedWrite: true })).toBeUndefined();
    expect(grantQuestion({ ...record, subject: { kind: 'computerUseTakeover' } })).toBeUndefined();
    expect(onceChoice([REJECT, ONCE])).toBe(ONCE);
  });

  it('finds a live grant whose covered set holds the request', () => {
    expect(findGrant([grant()], question, NOW)?.grantId).toBe('g1');
  });

  it('finds none for another sandbox mode, caller, tool or route', () => {
    expect(findGrant([grant({ sandboxMode: 'danger-full-access' })], question, NOW)).toBeUndefined();
    expect(findGrant([grant({ caller: 'session:s2' })], question, NOW)).toBeUndefined();
    expect(findGrant([grant({ tool: 'sh' })], question, NOW)).toBeUndefined();
    // A grant made where the rules are lenient never answers what a stricter route placed.
    expect(findGrant([grant({ route: 'prod' })], question, NOW)).toBeUndefined();
    expect(findGrant([grant({ route: '' })], question, NOW)).toBeUndefined();
    // Nor does the session's grant of another route.
    expect(
      findGrant([grant({ caller: 'session:s9', route: 'prod' })], question, NOW, 'session:s9'),
    ).toBeUndefined();
    expect(findGrant([grant({ caller: 'session:s9' })], question, NOW, 'session:s9')?.grantId).toBe('g1');
  });

  it("finds none of a session's grant made on another host, whatever the session id says", () => {
    // A session id is the host's word: another host (a hostile one copying it, or one whose ids
    // happen to collide) must not reach the grants people gave this host's session.
    expect(findGrant([grant({ hostId: 'other' })], question, NOW)).toBeUndefined();
    expect(
      findGrant(
        [grant({ caller: 'session:s9', hostId: 'other' })],
        { ...question, caller: 'user:U0OWN' },
        NOW,
        'session:s9',
      ),
    ).toBeUndefined();
  });

  it("finds none of an owner's grant made on another host: its paths and workspace are that host's", () => {
    // `make deploy` in /srv/app on one host says nothing of /srv/app on another of the owner's.
    const owners = { ...question, caller: 'user:U0OWN' };
    expect(findGrant([grant({ caller: 'user:U0OWN', hostId: 'other' })], owners, NOW)).toBeUndefined();
    expect(findGrant([grant({ caller: 'user:U0OWN' })], owners, NOW)?.grantId).toBe('g1');
    // A host's grant names its host itself.
    const hosts = { ...question, caller: 'host:main' };
    expect(findGrant([grant({ caller: 'host:main', hostId: 'main' })], hosts, NOW)?.grantId).toBe('g1');
  });

  it('finds none for a superset of what the grant covers', () => {
    const wider = { ...question, capabilities: ['exec:git push', 'exec:rm -rf /', 'in:/srv/repo'] };
    expect(findGrant([grant()], wider, NOW)).toBeUndefined();
  });

  it('finds none of a shell grant stored before the workspace was part of it (fail closed)', () => {
    expect(findGrant([grant({ capabilities: ['exec:git push'] })], question, NOW)).toBeUndefined();
    expect(
      findGrant([grant({ capabilities: ['exec:git push', 'in:/srv/other'] })], question, NOW),
    ).toBeUndefined();
  });

  it('finds none that expired (even a millisecond ago) or was revoked', () => {
    expect(findGrant([grant({ expiresAt: '2026-12-01T11:59:59.999Z' })], question, NOW)).toBeUndefined();
    expect(findGrant([grant({ expiresAt: NOW.toISOString() })], question, NOW)).toBeUndefined();
    expect(findGrant([grant({ revokedAt: '2026-12-01T11:30:00Z' })], question, NOW)).toBeUndefined();
  });

  it('never answers with a host-held grant: the host keeps those', () => {
    expect(findGrant([grant({ holder: 'host', rulePreview: 'git push' })], question, NOW)).toBeUndefined();
  });

  it('prefers the grant that lasts longest', () => {
    const found = findGrant(
      [grant({ grantId: 'short' }), grant({ grantId: 'long', expiresAt: '2026-12-02T00:00:00Z' })],
      question,
      NOW,
    );
    expect(found?.grantId).toBe('long');
  });
});

describe('callerFor: whom a route binds grants to', () => {
  const approval = { sessionId: 's1', hostId: 'ci', owner: 'U0ALICE' };
  it('is the session by default, the owner or the host when the route says so', () => {
    expect(callerFor('session', approval)).toBe('session:s1');
    expect(callerFor('owner', approval)).toBe('user:U0ALICE');
    expect(callerFor('host', approval)).toBe('host:ci');
  });
  it('is undefined for the owner of a host that has none', () => {
    expect(callerFor('owner', { sessionId: 's1', hostId: 'ci' })).toBeUndefined();
  });
});
