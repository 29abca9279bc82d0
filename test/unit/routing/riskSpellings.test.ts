// One request, many spellings: a risk rule that covers one covers them all. A program by its path,
// behind a wrapper, with its flags anywhere or bundled; a host in capitals or with its root dot; a
// path relative to the workspace. The shipped example's force-push rule is checked as it ships.

import { quote } from 'shell-quote';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import type { ProgramMatch, RiskRule } from '../../../src/domain/route.js';
import type { ApprovalSubject } from '../../../src/msp/protocol.js';
import { invocations } from '../../../src/routing/invocations.js';
import { programMatcher } from '../../../src/routing/programs.js';
import { RiskRules } from '../../../src/routing/risks.js';
import { shellCommands } from '../../../src/routing/shellWords.js';
import { exampleConfig } from '../../support/exampleConfig.js';
import { FAKE_SLACK_APP_TOKEN, FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';
import { shellSubject } from '../../support/shellSubject.js';
import { NO_REDIS_PASSWORD } from '../../support/testRedis.js';

const EXAMPLE = loadConfig({
  SLACK_BOT_TOKEN: FAKE_SLACK_BOT_TOKEN,
  SLACK_APP_TOKEN: FAKE_SLACK_APP_TOKEN,
  COUNTERSIGN_CONFIG: exampleConfig().path,
  PAGERDUTY_ROUTING_KEY: 'R0UTINGKEY0000000000000000000000',
  ...NO_REDIS_PASSWORD,
});

/** A shell subject as a host that splits commands sends it: one stage per argv. */
const stages = shellSubject;

/** A shell subject as a host that sends only the command text. */
const text = (command: string): ApprovalSubject => ({ kind: 'shell', command });

function namesOf(rules: RiskRule[]) {
  const compiled = new RiskRules(rules);
  return (subject: ApprovalSubject, workspaceRoot?: string, tool = 'bash') =>
    compiled
      .marksFor({ tool, subject, ...(workspaceRoot === undefined ? {} : { workspaceRoot }) })
      .map((mark) => mark.name);
}

describe('the shipped force-push rule (countersign.example.yml)', () => {
  const names = namesOf(EXAMPLE.risks);
  // Each spelling the issue named, and the plain one.
  const forcePushes = [
    ['git', 'push', '--force'],
    ['git', 'push', 'origin', 'main', '--force'],
    ['git', 'push', '-f'],
    ['git', 'push', 'origin', '+main'],
    ['/usr/bin/git', 'push', '--force'],
  ];

  it.each(forcePushes)('catches %s … whether the host split it into stages or not', (...argv) => {
    expect(names(stages(['npm', 'test'], argv))).toEqual(['force-push']);
    expect(names(text(`npm test && ${argv.join(' ')}`))).toEqual(['force-push']);
  });

  it.each([
    'git push origin main --force-with-lease',
    'git push --force-with-lease=main:abc123 origin main',
    'git push --force-w origin main',
    'git push -uf origin main',
    'git push --mirror backup',
    'git push origin +refs/heads/main:refs/heads/main',
    'git -C /srv/repo push -f',
    'git -c push.default=current --no-pager push --force',
    'GIT push --force',
    '"git" \'push\' "--force"',
    'sudo -u deploy git push --force',
    'sudo -Eu deploy /usr/bin/git push -f',
    'env GIT_TRACE=1 git push -f',
    'GIT_SSH_COMMAND="ssh -i key" git push -f',
    'command git push -f',
    'nice -n 10 git push -f',
    'time git push -f',
    'nohup git push -f &',
    'timeout 30s git push -f',
    "env -S 'git push' -f",
    "bash -lc 'cd /srv/repo && git push --force'",
    "sh -c 'git push -f'",
    "eval 'git push -f'",
    "su deploy -c 'git push -f'",
    'echo ok; git push -f',
    'echo $(git push -f)',
    'git push >/tmp/push.log 2>&1 --force',
    'git push > *.log --force',
    'git status\ngit push -f',
    'git status # why not\ngit push -f',
    'if true; then git push -f; fi',
  ])('catches %j', (command) => {
    expect(names(text(command))).toEqual(['force-push']);
  });

  it.each([
    'git push',
    'git push origin main',
    'git push --follow-tags origin main',
    'git push origin main:main',
    'git pushx --force',
    'legit push --force',
    'git fetch --force',
    'git log --grep push -f',
    'git commit -m "git push --force"',
    'echo git-push --force',
  ])('leaves %j alone', (command) => {
    expect(names(text(command))).toEqual([]);
  });
});

describe('a programs entry', () => {
  const run = (entry: ProgramMatch, argv: string[]) => invocations(argv).runs.some(programMatcher(entry));

  it('without a subcommand: the program with any of the flags, bundled or not', () => {
    const rmRecursive = { program: 'rm', flags: ['-r', '--recursive'] };
    expect(run(rmRecursive, ['rm', '-rf', '/srv/data'])).toBe(true);
    expect(run(rmRecursive, ['rm', '-fr', '/srv/data'])).toBe(true);
    expect(run(rmRecursive, ['/bin/rm', '--recursive', 'x'])).toBe(true);
    expect(run(rmRecursive, ['/bin/rm', '--rec', 'x'])).toBe(true);
    expect(run(rmRecursive, ['rm', 'x'])).toBe(false);
    expect(run(rmRecursive, ['rm', '--', '-rfile'])).toBe(true);
    expect(run(rmRecursive, ['farm', '-r'])).toBe(false);
  });

  it('a program alone: any run of it, behind any wrapper', () => {
    const dd = { program: 'dd' };
    expect(run(dd, ['sudo', 'dd', 'if=/dev/zero', 'of=/dev/sda'])).toBe(true);
    expect(run(dd, ['xargs', '-n', '1', 'dd'])).toBe(true);
    expect(run(dd, ['ionice', '-c', '3', 'nice', '-n', '19', 'dd'])).toBe(true);
    expect(run(dd, ['echo', 'dd'])).toBe(false);
  });

  it('args: globs on the operands after the subcommand, "*" across "/"', () => {
    const deleteProd = { program: 'kubectl', subcommand: 'delete', args: ['*prod*'] };
    expect(run(deleteProd, ['kubectl', '--context', 'prod', 'delete', 'pod', 'web-1'])).toBe(false);
    expect(run(deleteProd, ['kubectl', 'delete', 'ns/prod-eu'])).toBe(true);
    expect(run(deleteProd, ['kubectl', '-n', 'x', 'delete', 'deploy', 'api-prod'])).toBe(true);
    expect(run(deleteProd, ['kubectl', 'get', 'pods', 'prod'])).toBe(false);
  });

  it('a single-dash long flag is matched as written', () => {
    const findDelete = { program: 'find', flags: ['-delete'] };
    expect(run(findDelete, ['find', '.', '-name', '*.log', '-delete'])).toBe(true);
    expect(run(findDelete, ['find', '.', '-name', '*.log', '-print'])).toBe(false);
  });

  it('wrappers are looked through however deep they nest', () => {
    const deep = [
      ...Array.from({ length: 40 }, () => ['sudo', 'nice', 'env', 'A=1']).flat(),
      'git',
      'push',
      '-f',
    ];
    expect(invocations(deep).tangled).toBe(false);
    expect(run({ program: 'git', subcommand: 'push', flags: ['-f'] }, deep)).toBe(true);
    const nested = Array.from({ length: 12 }).reduce<string>(
      (script) => `bash -c ${quote([script])}`,
      'git push -f',
    );
    expect(run({ program: 'git', subcommand: 'push', flags: ['-f'] }, ['sh', '-c', nested])).toBe(true);
  });

  it('a few wrappers with options that may take values are read to the end', () => {
    const argv = [...Array.from({ length: 20 }, () => ['sudo', '-h']).flat(), 'git', 'push', '-f'];
    expect(invocations(argv).tangled).toBe(false);
    expect(run({ program: 'git', subcommand: 'push', flags: ['-f'] }, argv)).toBe(true);
  });

  it('a line built to be costly to unwrap is read no further, and then matches every programs rule', () => {
    const tangle = [...Array.from({ length: 5_000 }, () => ['sudo', '-h']).flat(), 'rm', '-rf', '/'];
    expect(invocations(tangle).tangled).toBe(true);
    const names = namesOf([
      { name: 'rm', match: { programs: [{ program: 'rm', flags: ['-r'] }] }, warning: 'Deletes' },
      { name: 'dd', match: { programs: [{ program: 'dd' }] }, warning: 'Disk' },
    ]);
    expect(names(stages(tangle))).toEqual(['rm', 'dd']);
    expect(names(stages(['sudo', 'rm', '-rf', '/']))).toEqual(['rm']);
  });

  it('a command text or script the shell splitter cannot read matches every programs rule', () => {
    const names = namesOf([{ name: 'rm', match: { programs: [{ program: 'rm' }] }, warning: 'Deletes' }]);
    expect(names(text('ls ${'))).toEqual(['rm']);
    expect(names(stages(['bash', '-c', 'ls ${']))).toEqual(['rm']);
    // A word of a host's stage is already split: only its command text is read as a shell's.
    expect(names({ kind: 'shell', stages: stages(['ls', '${']).stages })).toEqual([]);
  });
});

describe('a command or process substitution', () => {
  const names = namesOf([
    {
      name: 'fp',
      warning: 'w',
      match: {
        programs: [
          { program: 'git', subcommand: 'push', flags: ['--force'] },
          { program: 'git', subcommand: 'push', args: ['+*'] },
        ],
      },
    },
    { name: 'rm', warning: 'Deletes', match: { programs: [{ program: 'rm', flags: ['-r'] }] } },
  ]);

  it('reads the outer command on past a $(…) or <(…)', () => {
    for (const c of [
      'git push $(true) --force origin main',
      'git push <(true) --force',
      'git $(true) push --force',
      'git push origin $(true) +main',
      'git push $( (true) ) --force',
      'git push $(echo $(true)) --force',
      'git push $((1 + 2)) --force',
      'git push > $(mktemp) --force',
    ])
      expect(names(text(c)), c).toEqual(['fp']);
    // Where the wrapper's command may stand, the substitution may be any command (`rm -rf /srv`).
    for (const c of ['sudo $(true) git push --force', 'timeout 10s $(true) git push --force'])
      expect(names(text(c)), c).toEqual(['fp', 'rm']);
    expect(names(text('rm $(true) -rf /srv'))).toEqual(['rm']);
    expect(names(text('rm >(cat) -rf /srv'))).toEqual(['rm']);
  });

  it('the command inside is still matched on its own', () => {
    for (const c of [
      'echo $(git push --force)',
      'echo $(echo $(git push --force)) done',
      'diff <(git push --force) x',
      'git log $(git push --force)',
    ])
      expect(names(text(c)), c).toEqual(['fp']);
    expect(names(text('echo $(git status) $(git log)'))).toEqual([]);
  });

  it('an expansion where a flag or arg may stand counts as any of them: it cannot be read', () => {
    for (const c of [
      'F=--force; git push $F',
      'git push origin main $(echo --force)',
      'git push origin "$BRANCH"',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell variable, as an agent would write it
      'git push origin ${REF}',
      'sudo git push $OPTS origin main',
    ])
      expect(names(text(c)), c).toEqual(['fp']);
    expect(names(text('rm $TARGETS'))).toEqual(['rm']);
    expect(names(stages(['git', 'push', '$F']))).toEqual(['fp']);
    // Only once the program and the subcommand match.
    for (const c of ['git fetch $F', 'echo $F', 'git push origin main', 'rm $'])
      expect(names(text(c)), c).toEqual([]);
    // A subcommand in a variable may be any subcommand: it cannot be read either.
    expect(names(text('git $SUB --force'))).toEqual(['fp']);
  });

  it('a ")" that is not the substitution’s own hides no command after it', () => {
    // bash reads a case pattern's ")" inside $(…): the words after it are still a command.
    expect(names(text('echo $(case x in a) git push --force;; esac)'))).toEqual(['fp']);
    expect(names(text('echo $(true) rm -rf /srv'))).toEqual(['rm']);
  });
});

describe('a word the shell expands where a rule reads', () => {
  // The shipped force-push rule, and a recursive rm: what the agent writes so that bash runs them
  // while the words a rule reads (the program, its subcommand, its flags) say something else.
  const names = namesOf([
    ...EXAMPLE.risks.filter((rule) => rule.name === 'force-push'),
    {
      name: 'rm',
      warning: 'Deletes',
      match: { programs: [{ program: 'rm', flags: ['-r', '-R', '--recursive'] }] },
    },
  ]);

  it.each([
    'git {push,} -f',
    '{git,} push --force',
    'git push {--force,}',
    'git push origin {+main,}',
    'git push origin main {-f,}',
    '/usr/bin/{git,} push -f',
    'git {pull,push} --force',
    'g{i..i}t push -f',
    'git pu?h -f',
    'gi[t] push -f',
    'git push -[f]',
    'git push --forc[e]',
    'git push origin *',
  ])('brace expansion and file name patterns: %j is a force push', (command) => {
    expect(names(text(command))).toContain('force-push');
  });

  it.each(['{rm,} -rf /srv', 'rm {-rf,} /srv', 'r{m,} -rf /srv', 'r? -rf /srv', 'rm -[r]f /srv'])(
    '%j is a recursive rm',
    (command) => {
      expect(names(text(command))).toContain('rm');
    },
  );

  it.each([
    '$(printf git) push -f',
    'G=git; $G push -f',
    'git $(printf push) -f',
    "$(printf 'git push -f')",
    'sudo $(printf git) push -f',
    'git -C /srv/repo $(printf push) -f',
    // A ")" of a case pattern closes the substitution early: what follows may be its command.
    'echo $(case x in a) $(printf git) push -f;; esac)',
  ])('an expansion in the program or subcommand position: %j', (command) => {
    expect(names(text(command))).toContain('force-push');
  });

  it('a host stage it could not parse to the end could run anything', () => {
    const [parsed] = stages(['ls', '-la']).stages ?? [];
    if (!parsed) throw new Error('a stage');
    const fragment = { ...parsed, argv: ['$(printf git) push -f'], argvComplete: false };
    expect(names({ kind: 'shell', stages: [fragment] })).toEqual(['force-push', 'rm']);
    // The field is the host's to send: one that does not say it parsed the stage did not.
    const { argvComplete: _, ...unsaid } = parsed;
    expect(names({ kind: 'shell', stages: [unsaid] })).toEqual(['force-push', 'rm']);
    expect(names({ kind: 'shell', stages: [parsed] })).toEqual([]);
  });

  it.each([
    'setsid git push -f',
    'setsid -f git push -f',
    'flock /tmp/x git push -f',
    'flock -w 5 /tmp/x git push -f',
    "flock /tmp/x -c 'git push -f'",
    'taskset 1 git push -f',
    'taskset -c 0-3 git push -f',
    'numactl -N0 git push -f',
    'numactl --membind 0 git push -f',
    'prlimit git push -f',
    'prlimit --pid 1 --nofile=10 git push -f',
    'chroot / git push -f',
    'chroot --userspec 0:0 / git push -f',
    'nsenter -t 1 git push -f',
    'nsenter -t 1 -m -u git push -f',
    'setpriv git push -f',
    'setpriv --reuid 0 --init-groups git push -f',
    'unbuffer git push -f',
    'unbuffer -p git push -f',
    'chronic git push -f',
    'chronic -e git push -f',
    'firejail git push -f',
    'firejail --noprofile git push -f',
    'torsocks git push -f',
    'torsocks -P 9050 git push -f',
    'caffeinate git push -f',
    'caffeinate -t 60 git push -f',
    'script -c "git push -f"',
    'script -q -c "git push -f" /dev/null',
    'script -q /dev/null git push -f',
    'runuser -u x -- git push -f',
    'runuser -u x git push -f',
    "runuser x -c 'git push -f'",
    'coproc git push -f',
    'coproc PUSH { git push -f; }',
  ])('through the wrapper in %j', (command) => {
    expect(names(text(command))).toEqual(['force-push']);
  });

  it.each([
    'ls *.ts',
    "npm test -- --grep '{a,b}'",
    'npm test -- --grep {a,b}',
    'rm -f build/*.o',
    'git add *.ts',
    'git add src/{a,b}.ts',
    'git commit -m "fix {a,b} and *"',
    'git -C "$REPO" status',
    'git log --format=%H -- *.ts',
    '[ -f x ] && git status',
    '[[ -f x ]] && git push',
    'echo $(git status) $(git log)',
    'find . -name "*.ts" -exec grep -l x {} +',
    'X=$(git rev-parse HEAD)',
    // An assignment before the program is not the program, whatever its value holds.
    'A=* git status',
    'A={a,b} ls',
    'for f in *.ts; do echo $f; done',
  ])('leaves the common %j alone', (command) => {
    expect(names(text(command))).toEqual([]);
  });
});

describe('a command line split as the shell would', () => {
  it('at its operators, redirections left out, quotes and variables kept', () => {
    expect(shellCommands('A=1 git push "$REMOTE" \'a b\' >log 2>&1 | tee x && (cd y; ls)')).toEqual([
      ['A=1', 'git', 'push', '$REMOTE', 'a b'],
      ['tee', 'x'],
      ['cd', 'y'],
      ['ls'],
    ]);
  });

  it('a substitution in its own place in the command, and read as a command of its own', () => {
    expect(shellCommands('git push $(git remote | head -1) --force; ls <(cat a) x')).toEqual([
      ['git', 'push', '$(…)', '--force'],
      ['git', 'remote'],
      ['head', '-1'],
      ['--force'],
      ['ls', '<(…)', 'x'],
      ['cat', 'a'],
      ['x'],
    ]);
  });
});

describe('a target host', () => {
  const names = namesOf([
    { name: 'production', match: { targets: ['*.prod.example.com'] }, warning: 'Prod' },
  ]);
  const network = (host: string): ApprovalSubject => ({
    kind: 'network',
    host,
    port: 443,
    protocol: 'https',
  });

  it('in any case, with or without its root dot', () => {
    expect(names(network('db.prod.example.com'))).toEqual(['production']);
    expect(names(network('db.prod.example.com.'))).toEqual(['production']);
    expect(names(network('DB.PROD.Example.COM.'))).toEqual(['production']);
    expect(names(network('db.prod.example.com.evil.net'))).toEqual([]);
    expect(names(network('db.staging.example.com.'))).toEqual([]);
  });

  it('a pattern in capitals or with the root dot means the same', () => {
    const dotted = namesOf([{ name: 'p', match: { targets: ['*.PROD.Example.com.'] }, warning: 'Prod' }]);
    expect(dotted(network('db.prod.example.com'))).toEqual(['p']);
    expect(dotted(network('db.prod.example.com.'))).toEqual(['p']);
  });

  it('as a URL parser reads it: internationalized names and IPv4 forms', () => {
    const idn = namesOf([
      { name: 'idn', match: { targets: ['*.bücher.example'] }, warning: 'Books' },
      { name: 'loopback', match: { targets: ['127.0.0.*'] }, warning: 'Local' },
    ]);
    expect(idn(network('shop.xn--bcher-kva.example'))).toEqual(['idn']);
    expect(idn(network('shop.BÜCHER.example.'))).toEqual(['idn']);
    expect(idn(network('0x7f.1'))).toEqual(['loopback']);
  });

  it('an IPv6 address that carries an IPv4 one: mapped, compatible, NAT64', () => {
    const metadata = namesOf([
      { name: 'metadata', match: { targets: ['169.254.169.254', '10.*'] }, warning: 'Metadata' },
    ]);
    for (const host of [
      '[::ffff:169.254.169.254]',
      '[::ffff:a9fe:a9fe]',
      '::ffff:a9fe:a9fe',
      '::FFFF:169.254.169.254',
      '0:0:0:0:0:ffff:a9fe:a9fe',
      '[::ffff:10.1.2.3]',
      '::169.254.169.254',
      '[64:ff9b::169.254.169.254]',
      '64:ff9b::a01:203',
    ])
      expect(metadata(network(host)), host).toEqual(['metadata']);
    for (const host of [
      '[::1]',
      '::ffff:8.8.8.8',
      '2001:db8::a9fe:a9fe',
      '[fe80::1%eth0]',
      '169.254.169.253',
    ])
      expect(metadata(network(host)), host).toEqual([]);
  });

  it('an IPv6 address in any spelling, with or without brackets', () => {
    const v6 = namesOf([{ name: 'v6', match: { targets: ['2001:db8::1', '2001:db8::2'] }, warning: 'V6' }]);
    expect(v6(network('[2001:DB8:0:0:0:0:0:1]'))).toEqual(['v6']);
    expect(v6(network('2001:db8::0:1'))).toEqual(['v6']);
    expect(v6(network('[2001:db8::2]'))).toEqual(['v6']);
    expect(v6(network('2001:db8::3'))).toEqual([]);
  });
});

describe('a file path', () => {
  const names = namesOf([
    { name: 'prod-config', match: { paths: ['/srv/app/config/**'] }, warning: 'Prod config' },
    { name: 'yaml', match: { paths: ['deploy/*.yml'] }, warning: 'Deploy file' },
    { name: 'passwords', match: { paths: ['/etc/passwd'] }, warning: 'Passwords' },
  ]);
  const file = (path: string): ApprovalSubject => ({ kind: 'fileAccess', path, access: 'write' });

  it('relative: resolved against the workspace root first', () => {
    expect(names(file('config/db.yml'), '/srv/app')).toEqual(['prod-config']);
    expect(names(file('./config/../config/db.yml'), '/srv/app/')).toEqual(['prod-config']);
    expect(names(file('../app/config/db.yml'), '/srv/other')).toEqual(['prod-config']);
    expect(names(file('config/db.yml'), '/srv/other')).toEqual([]);
    expect(names({ kind: 'unixSocket', path: 'config/run.sock' }, '/srv/app')).toEqual(['prod-config']);
  });

  it('a pattern without a leading "/" is relative to the workspace root, however the path is spelt', () => {
    expect(names(file('deploy/prod.yml'), '/srv/app')).toEqual(['yaml']);
    expect(names(file('/srv/app/deploy/prod.yml'), '/srv/app')).toEqual(['yaml']);
    expect(names(file('/srv/other/deploy/prod.yml'), '/srv/app')).toEqual([]);
    expect(names(file('/srv/app/deploy/prod.yml'), '/srv/other')).toEqual([]);
  });

  it('relative with no known root: as written, and as if below any directory', () => {
    // The root could be /srv/app/config: `/srv/app/config/**` then covers any relative path.
    expect(names(file('README.md'))).toEqual(['prod-config']);
    expect(names(file('deploy/prod.yml'))).toEqual(['prod-config', 'yaml']);
    expect(names(file('../../etc/passwd'))).toEqual(['prod-config', 'passwords']);
    expect(names(file('passwd'))).toEqual(['prod-config', 'passwords']);
    const exact = namesOf([{ name: 'k', match: { paths: ['/srv/tls/server.key'] }, warning: 'Key' }]);
    expect(exact(file('server.key'))).toEqual(['k']);
    expect(exact(file('../tls/server.key'))).toEqual(['k']);
    expect(exact(file('server.pem'))).toEqual([]);
    expect(exact(file('other/server.key'))).toEqual([]);
    // An absolute path, root unknown: the root could be any of its directories.
    expect(names(file('/home/me/deploy/prod.yml'))).toEqual(['yaml']);
    expect(names(file('/home/me/README.md'))).toEqual([]);
  });

  it('through a "..", what follows it as if below any directory: a link may lead anywhere', () => {
    // /srv/repo/link may be a symbolic link to /etc/ssl: its `..` is then /etc, not /srv/repo.
    // (`/srv/app/config/**` covers whatever lies below a directory nobody knows, as above.)
    expect(names(file('/srv/repo/link/../passwd'))).toEqual(['prod-config', 'passwords']);
    expect(names(file('/srv/repo/link/../passwd'), '/srv/repo')).toEqual(['prod-config', 'passwords']);
    expect(names(file('link/../passwd'), '/srv/repo')).toEqual(['prod-config', 'passwords']);
    expect(names(file('/srv/repo/a/../b/../config/db.yml'), '/srv/repo')).toEqual(['prod-config']);
    // Without a "..", a path is read as spelt.
    expect(names(file('/srv/repo/passwd'), '/srv/repo')).toEqual([]);
    expect(names(file('/srv/repo/link/./passwd'), '/srv/repo')).toEqual([]);
  });

  // `/proc/self/root/etc/passwd` is `/etc/passwd`; below `/proc/self/cwd` lies a directory only
  // the process knows, and `/dev/fd/3` or `/proc/self/fd/3` is an open file, any file at all.
  it('through /proc and /dev/fd: the same tree again, an unknown directory, an unknown file', () => {
    expect(names(file('/proc/self/root/etc/passwd'))).toEqual(['passwords']);
    expect(names(file('/proc/1/task/1/root/proc/thread-self/root/etc/passwd'))).toEqual(['passwords']);
    expect(names(file('/proc/1/root/srv/app/config/db.yml'), '/srv/app')).toEqual(['prod-config']);
    expect(names(file('config/db.yml'), '/proc/self/root/srv/app')).toEqual(['prod-config']);
    expect(names(file('deploy/prod.yml'), '/proc/self/root/srv/app/')).toEqual(['yaml']);
    // Below a process's cwd: as a relative path with no known root.
    expect(names(file('/proc/self/cwd/deploy/prod.yml'), '/srv/other')).toEqual(['prod-config', 'yaml']);
    expect(names(file('passwd'), '/proc/self/cwd')).toEqual(['prod-config', 'passwords']);
    // An open file: every rule.
    for (const path of [
      '/dev/fd/3',
      '/proc/self/fd/3',
      '/proc/42/task/42/fd/1',
      '/dev/stdout',
      '/proc/self/map_files/x',
    ])
      expect(names(file(path), '/srv/other'), path).toEqual(['prod-config', 'yaml', 'passwords']);
    // What names a file of its own stays as spelt.
    expect(names(file('/proc/cpuinfo'), '/srv/other')).toEqual([]);
    expect(names(file('/srv/other/proc/self/fd/3'), '/srv/other')).toEqual([]);
  });

  it('the root itself as a pattern', () => {
    const root = namesOf([{ name: 'root', match: { paths: ['/'] }, warning: 'Root' }]);
    expect(root(file('/'))).toEqual(['root']);
    expect(root(file('/srv/..'))).toEqual(['root']);
    expect(root(file('x'))).toEqual([]);
  });
});

describe('in any case: a rule that covers one spelling covers its case variants', () => {
  // On macOS and Windows `/srv/app/.ENV` is the file `.env`, and `/ETC/passwd` is `/etc/passwd`:
  // a rule that missed them would let the file be written past its approvers.
  const secrets: RiskRule = {
    name: 'secrets',
    match: { paths: ['**/.env', '/etc/**', 'config/*.yml'] },
    warning: 'Touches secrets',
    approvers: { users: ['U0SEC'], usergroups: [] },
  };
  const file = (path: string): ApprovalSubject => ({ kind: 'fileAccess', path, access: 'write' });
  const marked = (path: string, workspaceRoot?: string) =>
    new RiskRules([secrets])
      .marksFor({
        tool: 'Write',
        subject: file(path),
        ...(workspaceRoot === undefined ? {} : { workspaceRoot }),
      })
      .map((mark) => mark.name);

  it('paths, absolute or relative, and the workspace root in another case than the path', () => {
    expect(marked('/srv/app/.ENV', '/srv/app')).toEqual(['secrets']);
    expect(marked('/srv/app/.Env')).toEqual(['secrets']);
    expect(marked('.ENV', '/srv/app')).toEqual(['secrets']);
    expect(marked('/ETC/passwd', '/srv/app')).toEqual(['secrets']);
    expect(marked('/Etc/Passwd')).toEqual(['secrets']);
    expect(marked('../../ETC/passwd', '/srv/app')).toEqual(['secrets']);
    expect(marked('/SRV/APP/Config/DB.YML', '/srv/app')).toEqual(['secrets']);
    expect(marked('/srv/app/config/db.yml', '/SRV/App')).toEqual(['secrets']);
    expect(marked('Config/db.yml', '/Srv/App')).toEqual(['secrets']);
  });

  it('other files still unmarked', () => {
    expect(marked('/srv/app/.envrc', '/srv/app')).toEqual([]);
    expect(marked('/srv/app/ENV', '/srv/app')).toEqual([]);
    expect(marked('/srv/etc/passwd', '/srv/app')).toEqual([]);
    expect(marked('/srv/other/config/db.yml', '/srv/app')).toEqual([]);
    expect(marked('/SRV/APP/config/db.yml', '/srv/other')).toEqual([]);
  });

  it('tools and commands', () => {
    const names = namesOf([
      { name: 'deploy', match: { tools: ['deploy_*'] }, warning: 'Deploys' },
      { name: 'drop', match: { commands: ['psql * -c *drop table*'] }, warning: 'Drops' },
    ]);
    const tool: ApprovalSubject = { kind: 'tool' };
    expect(names(tool, undefined, 'deploy_prod')).toEqual(['deploy']);
    expect(names(tool, undefined, 'Deploy_prod')).toEqual(['deploy']);
    expect(names(tool, undefined, 'DEPLOY_PROD')).toEqual(['deploy']);
    expect(names(tool, undefined, 'redeploy_prod')).toEqual([]);
    expect(names(tool, undefined, 'deploy')).toEqual([]);
    expect(names(text('psql prod -c "DROP TABLE users"'))).toEqual(['drop']);
    expect(names(text('PSQL prod -c "drop table users"'))).toEqual(['drop']);
    expect(names(text('psql prod -c "select 1"'))).toEqual([]);
  });

  it("a programs entry's args", () => {
    const deleteProd = { program: 'kubectl', subcommand: 'delete', args: ['*prod*'] };
    const run = (argv: string[]) => invocations(argv).runs.some(programMatcher(deleteProd));
    expect(run(['kubectl', 'delete', 'ns/PROD-eu'])).toBe(true);
    expect(run(['KUBECTL', 'Delete', 'ns/Prod-eu'])).toBe(true);
    expect(run(['kubectl', 'delete', 'ns/staging'])).toBe(false);
  });
});
