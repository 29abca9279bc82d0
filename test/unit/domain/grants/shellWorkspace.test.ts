import { describe, expect, it } from 'vitest';
import {
  alikeCapabilities,
  type CapabilityRequest,
  covers,
  stageCapabilities,
} from '../../../../src/domain/grants/capabilities.js';
import type { ApprovalSubject } from '../../../../src/msp/protocol.js';

// What `make install`, `npm test`, `./deploy.sh` or `git push` do depends on the directory they
// run in: a shell grant is for a command in one workspace, never the same words anywhere else.

function stage(sourceIndex: number, argv: string[], argvComplete = true) {
  return {
    requirementId: { approvalId: 'a1', sourceIndex },
    position: sourceIndex + 1,
    totalStages: 2,
    argv,
    argvComplete,
    resolution: { kind: 'unresolved' },
  };
}

function shellIn(workspaceRoot: string | undefined, ...stages: string[][]): ApprovalSubject {
  return {
    kind: 'shell',
    command: stages.map((argv) => argv.join(' ')).join(' && '),
    ...(workspaceRoot === undefined ? {} : { workspaceRoot }),
    stages: stages.map((argv, i) => stage(i, argv)),
  };
}

function caps(subject: ApprovalSubject, sourceIndex = 0) {
  const request: CapabilityRequest = {
    tool: 'bash',
    subject,
    currentRequirementId: { approvalId: 'a1', sourceIndex },
    protectedWrite: false,
  };
  return stageCapabilities(request);
}

describe('a shell stage needs the workspace it runs in (docs/grants.md)', () => {
  it('adds in:<root> beside the exec capability of a canonical root', () => {
    expect(caps(shellIn('/srv/a', ['make', 'install']))).toEqual({
      capabilities: ['exec:make install', 'in:/srv/a'],
    });
  });

  it('does not let a grant made in one workspace cover the same argv in another', () => {
    const granted = caps(shellIn('/srv/a', ['make', 'install'])).capabilities;
    const elsewhere = caps(shellIn('/srv/b', ['make', 'install'])).capabilities;
    expect(covers(granted, elsewhere)).toBe(false);
    expect(covers(granted, caps(shellIn('/srv/a', ['make', 'install'])).capabilities)).toBe(true);
  });

  it('is not grantable with no workspace root, and shows the command all the same', () => {
    expect(caps(shellIn(undefined, ['make', 'install']))).toEqual({
      capabilities: ['exec:make install'],
      notGrantable: 'a command with no workspace root',
    });
  });

  it('is not grantable with a root that is not canonical, as for a file path', () => {
    for (const root of ['srv/a', '/srv/a/', '/srv//a', '/srv/./a', '/srv/b/../a', '/srv/a\0', '']) {
      const derived = caps(shellIn(root, ['make', 'install']));
      expect(derived.notGrantable, JSON.stringify(root)).toMatch(/^a workspace root /);
      expect(derived.capabilities).toEqual(['exec:make install']);
    }
  });

  it('is not grantable after an earlier stage that may change the directory or environment', () => {
    const changers = [
      ['cd', '/srv/b'],
      ['pushd', '/srv/b'],
      ['popd'],
      ['source', './env.sh'],
      ['.', './env.sh'],
      ['eval', 'cd /srv/b'],
      ['exec', 'bash'],
      ['export', 'PATH=/tmp/evil'],
      ['PATH=/tmp/evil'],
      ['alias', 'make=./evil'],
      ['builtin', 'cd', '/srv/b'],
      ['command', 'cd', '/srv/b'],
      ['printf', '-v', 'PATH', '/tmp/evil'],
    ];
    for (const first of changers) {
      const derived = caps(shellIn('/srv/a', first, ['make', 'install']), 1);
      const why = first[0]!.includes('=')
        ? 'a variable assignment'
        : first.slice(0, first[0] === 'printf' ? 2 : 1).join(' ');
      expect(derived.notGrantable, first.join(' ')).toBe(`a stage after ${why}`);
      // What it asks is still shown.
      expect(derived.capabilities).toEqual(['exec:make install', 'in:/srv/a']);
    }
  });

  it('is not grantable after an earlier stage the host could not parse', () => {
    const subject: ApprovalSubject = {
      kind: 'shell',
      command: 'cd "$(pick)" && make install',
      workspaceRoot: '/srv/a',
      stages: [stage(0, ['cd "$(pick)"'], false), stage(1, ['make', 'install'])],
    };
    expect(caps(subject, 1).notGrantable).toBe('a stage after one that could not be parsed');
  });

  it('is not grantable when an earlier stage is missing from the subject', () => {
    const subject = shellIn('/srv/a', ['npm', 'test'], ['make', 'install']);
    subject.stages = subject.stages!.slice(1);
    expect(caps(subject, 1).notGrantable).toBe('a stage after one not shown');
  });

  it('still grants a stage after commands that leave the shell as it was, and a first cd itself', () => {
    expect(caps(shellIn('/srv/a', ['npm', 'test'], ['git', 'push']), 1)).toEqual({
      capabilities: ['exec:git push', 'in:/srv/a'],
    });
    expect(caps(shellIn('/srv/a', ['cd', 'sub'], ['make']), 0)).toEqual({
      capabilities: ['exec:cd sub', 'in:/srv/a'],
    });
  });
});

describe('alikeCapabilities: what batch triage groups by, whatever the workspace', () => {
  it('is the stage capability without the workspace, as before', () => {
    const request = (root: string): CapabilityRequest => ({
      tool: 'bash',
      subject: shellIn(root, ['npm', 'test']),
      currentRequirementId: { approvalId: 'a1', sourceIndex: 0 },
      protectedWrite: false,
    });
    expect(alikeCapabilities(request('/srv/wt-0'))).toEqual({ capabilities: ['exec:npm test'] });
    expect(alikeCapabilities(request('/srv/wt-1'))).toEqual({ capabilities: ['exec:npm test'] });
    expect(alikeCapabilities({ ...request('/srv/a'), protectedWrite: true }).notGrantable).toBe(
      'a protected write',
    );
  });
});
