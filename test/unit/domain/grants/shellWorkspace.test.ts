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

  it('is not grantable in a root spelled through /proc or /dev/fd: another name for a tree, or none', () => {
    // /proc/self/root/srv/prod is /srv/prod; a grant made on a lax route for that spelling would
    // answer the same words there, whichever route placed them (docs/routing.md).
    for (const root of [
      '/proc/self/root/srv/prod',
      '/proc/1/root/srv/prod',
      '/proc/self/cwd',
      '/proc',
      '/dev/fd/3',
    ]) {
      const derived = caps(shellIn(root, ['make', 'install']));
      expect(derived.notGrantable, root).toBe('a workspace root through /proc or /dev/fd');
      expect(derived.capabilities).toEqual(['exec:make install']);
    }
    expect(caps(shellIn('/srv/procedures', ['make', 'install'])).notGrantable).toBeUndefined();
    expect(caps(shellIn('/dev/fdx', ['make', 'install'])).notGrantable).toBeUndefined();
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

  it('is not grantable after any builtin, reserved word or precommand modifier of bash or zsh', () => {
    // Not a list of the words known to move the shell: any word the shell itself runs does, but
    // for the few builtins that change nothing.
    const shellOwn = [
      ['chdir', '/srv/b'],
      ['noglob', 'cd', '/srv/b'],
      ['nocorrect', 'cd', '/srv/b'],
      ['-', 'cd', '/srv/b'],
      ['builtin', 'cd', '/srv/b'],
      ['command', 'cd', '/srv/b'],
      ['exec', 'cd', '/srv/b'],
      ['setopt', 'autocd'],
      ['unsetopt', 'chase_links'],
      ['emulate', 'sh'],
      ['autoload', '-U', 'make'],
      ['zmodload', 'zsh/files'],
      ['functions', '-c', 'cd', 'make'],
      ['unfunction', 'make'],
      ['disable', 'cd'],
      ['enable', '-n', 'cd'],
      ['hash', '-d', 'a=/srv/b'],
      ['alias', 'make=./evil'],
      ['vared', 'PATH'],
      ['zparseopts', '-A', 'PATH', 'x'],
      ['print', '-v', 'PATH', '/tmp/evil'],
      ['shopt', '-s', 'autocd'],
      ['time', 'cd', '/srv/b'],
      ['repeat', '1', 'cd', '/srv/b'],
    ];
    for (const first of shellOwn) {
      const derived = caps(shellIn('/srv/a', first, ['make', 'install']), 1);
      expect(derived.notGrantable, first.join(' ')).toBe(`a stage after ${first[0]}`);
      expect(derived.capabilities).toEqual(['exec:make install', 'in:/srv/a']);
    }
  });

  it('is not grantable after a stage whose command may be a directory: with autocd the shell goes there', () => {
    for (const path of ['/srv/b', '~/x', '~a', '..', './build', 'sub/dir', '=make', '%1', '*']) {
      const derived = caps(shellIn('/srv/a', [path], ['make', 'install']), 1);
      expect(derived.notGrantable, path).toBe(`a stage after ${path}`);
    }
    // A program by its path is no exception: nothing here knows which it is.
    expect(caps(shellIn('/srv/a', ['./configure'], ['make', 'install']), 1).notGrantable).toBe(
      'a stage after ./configure',
    );
    expect(caps(shellIn('/srv/a', [], ['make', 'install']), 1).notGrantable).toBe(
      'a stage after an empty command',
    );
  });

  it('is not grantable after a still builtin given the option that sets a variable', () => {
    for (const [first, why] of [
      [['printf', '-vPATH', '/tmp/evil'], 'printf -vPATH'],
      [['test', '-v', 'a[PATH=1]'], 'test -v'],
      [['[', '-v', 'a[PATH=1]', ']'], '[ -v'],
    ] as const) {
      const derived = caps(shellIn('/srv/a', [...first], ['make', 'install']), 1);
      expect(derived.notGrantable, first.join(' ')).toBe(`a stage after ${why}`);
    }
  });

  it('is not grantable after a stage with an expansion, which may assign whatever the command', () => {
    for (const first of [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion, as an agent would write it
      ['ls', '${PATH::=/tmp/evil}'],
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion, as an agent would write it
      ['echo', '${CDPATH:=/srv/b}'],
      ['true', '$((PATH = 0))'],
      ['git', 'log', '`cd /srv/b`'],
    ]) {
      const derived = caps(shellIn('/srv/a', first, ['make', 'install']), 1);
      expect(derived.notGrantable, first.join(' ')).toBe('a stage after an expansion');
    }
  });

  // zsh runs a glob qualifier's code (`e:…:`, `+name`) in the shell itself, as it expands the
  // word: `ls *(e:'cd /srv/b':)` moves the shell for the stages after it.
  it('is not grantable after a stage with a word that may be a glob qualifier', () => {
    for (const first of [
      ['ls', "*(e:'cd /srv/b':)"],
      ['ls', '*(+movefn)'],
      ['ls', '-d', '**/*(.e_cd /srv/b_)'],
      ['ls', "*(#qe:'cd /srv/b':)x"],
      // A subshell inside the qualifier's code: the last parenthesised part holds another.
      ['ls', "*(e:'cd /srv/b; (true)':)"],
      ['ls', '*(e:cd /srv/b; (true):)'],
    ]) {
      const derived = caps(shellIn('/srv/a', first, ['make', 'install']), 1);
      expect(derived.notGrantable, first.join(' ')).toBe('a stage after a glob qualifier');
    }
  });

  it('still grants a stage after programs by name and builtins that change nothing', () => {
    const plain = [
      ['git', 'status'],
      ['npm', 'test'],
      ['ls', '-la'],
      ['python3.12', '-m', 'build'],
      ['g++', '-o', 'x', 'x.cc'],
      ['echo', 'building'],
      ['printf', '%s\\n', 'building'],
      ['test', '-f', 'Makefile'],
      ['[', '-f', 'Makefile', ']'],
      ['true'],
      ['pwd'],
    ];
    for (const first of plain) {
      expect(caps(shellIn('/srv/a', first, ['make', 'install']), 1), first.join(' ')).toEqual({
        capabilities: ['exec:make install', 'in:/srv/a'],
      });
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
