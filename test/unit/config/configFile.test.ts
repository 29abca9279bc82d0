// The COUNTERSIGN_CONFIG file's hosts, route rules and admins: the shipped example loads as the
// configuration reference (docs/configuration.md) describes it, and each mistake stops start-up with one line naming its place.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/config.js';
import { exampleConfig } from '../../support/exampleConfig.js';
import { FAKE_SLACK_APP_TOKEN, FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';
import { NO_REDIS_PASSWORD } from '../../support/testRedis.js';

// The shipped example, its host's cwd (/srv/agents) made a directory that exists.
const { path: EXAMPLE, cwd: EXAMPLE_HOST_CWD } = exampleConfig();

/** The environment of the file-only case: no MSP_HOST_COMMAND, no SLACK_CHANNEL. */
function fileEnv(path: string, overrides: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return {
    SLACK_BOT_TOKEN: FAKE_SLACK_BOT_TOKEN,
    SLACK_APP_TOKEN: FAKE_SLACK_APP_TOKEN,
    COUNTERSIGN_CONFIG: path,
    ...NO_REDIS_PASSWORD,
    ...overrides,
  };
}

function configFile(yaml: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'countersign-file-')), 'countersign.yml');
  writeFileSync(file, yaml);
  return file;
}

function errorOf(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).not.toMatch(/\n/);
    return error as ConfigError;
  }
  throw new Error('expected loadConfig to throw');
}

describe('countersign.example.yml', () => {
  it('loads as the complete example of docs/configuration.md', () => {
    const config = loadConfig(
      fileEnv(EXAMPLE, { PAGERDUTY_ROUTING_KEY: 'R0UTINGKEY0000000000000000000000' }),
    );
    expect(config.msp.hosts).toEqual([
      {
        id: 'main',
        command: 'muse serve',
        sandboxMode: 'workspace-write',
        cwd: EXAMPLE_HOST_CWD,
        env: { MUSE_PROFILE: 'ci' },
        owner: 'U0ALICE',
      },
    ]);
    expect(config.routes).toEqual([
      {
        name: 'deploys',
        channel: 'C0DEPLOYS',
        match: { sessionTitles: ['*deploy*'], subjects: ['shell'], protectedWrite: true },
        approvers: { users: ['U0ALICE'], usergroups: ['S0SRE'] },
        protectedWriteApprovers: { users: ['U0BOB', 'U0CAROL'], usergroups: [] },
        allowSelfApproval: false,
        allowExternal: false,
        allowGuests: false,
        rejectReason: 'required',
        quickReasons: ['Use a PR instead', 'Not during a freeze'],
        quorum: 2,
        grants: { enabled: false },
        oncall: {
          kind: 'rotation',
          users: ['U0ALICE', 'U0BOB'],
          startMs: Date.parse('2026-11-30T09:00:00Z'),
          everyMs: 7 * 86_400_000,
          timezone: 'Europe/Berlin',
        },
        escalation: [
          { afterMs: 15 * 60_000, action: 'mention', target: 'oncall' },
          { afterMs: 30 * 60_000, action: 'dm', target: 'oncall' },
          { afterMs: 4 * 3_600_000, action: 'timeout' },
        ],
      },
      {
        name: 'default',
        channel: 'C0APPROVALS',
        grants: {
          enabled: true,
          caller: 'session',
          ttlMs: 8 * 3_600_000,
          maxTtlMs: 7 * 86_400_000,
          choices: [
            { kind: 'time', ms: 3_600_000 },
            { kind: 'time', ms: 8 * 3_600_000 },
            { kind: 'session' },
          ],
        },
        oncall: { kind: 'usergroup', usergroup: 'S0ONCALL' },
        escalation: [
          { afterMs: 10 * 60_000, action: 'remind' },
          { afterMs: 20 * 60_000, action: 'mention', target: 'oncall', broadcast: true },
          { afterMs: 30 * 60_000, action: 'dm', target: 'oncall' },
          { afterMs: 45 * 60_000, action: 'page' },
        ],
      },
    ]);
    expect(config.admins).toEqual(['U0ADMIN']);
    expect(config.risks.map((r) => r.name)).toEqual(['force-push', 'kubectl-delete', 'secrets']);
    expect(config.risks[0]?.match).toEqual({
      programs: [
        { program: 'git', subcommand: 'push', flags: ['--force', '--force-with-lease', '-f', '--mirror'] },
        { program: 'git', subcommand: 'push', args: ['+*'] },
      ],
    });
    // Its page step needs a routing key.
    expect(() => loadConfig(fileEnv(EXAMPLE))).toThrow(/escalation\[3\] pages, but there is no routing key/);
    // Without SLACK_CHANNEL the catch-all route is the default channel.
    expect(config.slack.channel).toBe('C0APPROVALS');
  });

  it('takes MSP_SANDBOX_MODE for a host that names no sandboxMode, and turns env values into strings', () => {
    const file = configFile(
      'hosts:\n  - id: ci\n    command: muse serve\n    env: { RETRIES: 3, VERBOSE: true }\nroutes:\n  - channel: C0ALL\n',
    );
    const config = loadConfig(fileEnv(file, { MSP_SANDBOX_MODE: 'read-only' }));
    expect(config.msp.hosts).toEqual([
      { id: 'ci', command: 'muse serve', sandboxMode: 'read-only', env: { RETRIES: '3', VERBOSE: 'true' } },
    ]);
  });

  it('lets a route name any host id when the file lists no hosts (MSP_HOST_COMMAND is host "default")', () => {
    const file = configFile('routes:\n  - channel: C0CI\n    match: { hosts: [ci] }\n');
    const config = loadConfig(fileEnv(file, { MSP_HOST_COMMAND: 'muse serve', SLACK_CHANNEL: 'C0ALL' }));
    expect(config.msp.hosts).toEqual([{ id: 'default', command: 'muse serve', sandboxMode: 'default' }]);
    expect(config.routes).toEqual([{ channel: 'C0CI', match: { hosts: ['ci'] } }]);
  });
});

describe('routes[].grants', () => {
  const hostsWith = (owner: string) =>
    `hosts:\n  - id: main\n    command: muse serve\n${owner}  - id: ci\n    command: muse ci\n`;

  it('takes enabled, ttl, maxTtl and caller, each optional', () => {
    const file = configFile('routes:\n  - channel: C0ALL\n    grants: { ttl: 30m, caller: host }\n');
    const config = loadConfig(fileEnv(file, { MSP_HOST_COMMAND: 'muse serve' }));
    expect(config.routes[0]?.grants).toEqual({ ttlMs: 30 * 60_000, caller: 'host' });
  });

  it('rejects a misspelt key, a bad duration, an unknown caller and a ttl beyond the maximum, naming the place', () => {
    const cases: Array<[string, RegExp]> = [
      ['grants: { ttl: 8h, expiry: 1d }', /routes\[0\]\.grants: key "expiry" is not supported/],
      [
        'grants: { ttl: soon }',
        /routes\[0\]\.grants\.ttl must be a duration such as 30s, 15m, 8h or 7d \(got "soon"\)/,
      ],
      [
        'grants: { caller: team }',
        /routes\[0\]\.grants\.caller must be session, owner or host \(got "team"\)/,
      ],
      ['grants: { ttl: 2d, maxTtl: 1d }', /routes\[0\]\.grants ttl is longer than maxTtl/],
      [
        'grants: { ttl: 8d }',
        /routes\[0\]\.grants\.ttl is longer than the maximum \(COUNTERSIGN_GRANT_MAX_TTL\)/,
      ],
    ];
    for (const [grants, message] of cases) {
      const file = configFile(`routes:\n  - channel: C0ALL\n    ${grants}\n`);
      const err = errorOf(fileEnv(file, { MSP_HOST_COMMAND: 'muse serve' }));
      expect(err.variable).toBe('COUNTERSIGN_CONFIG');
      expect(err.message).toMatch(message);
      expect(err.message).not.toContain('\n');
    }
  });

  it('takes choices: durations, session and counts of uses, in order', () => {
    const file = configFile(
      'routes:\n  - channel: C0ALL\n    grants: { maxTtl: 2d, choices: [30m, 1d, session, 10 uses, 1 use] }\n',
    );
    const config = loadConfig(fileEnv(file, { MSP_HOST_COMMAND: 'muse serve' }));
    expect(config.routes[0]?.grants?.choices).toEqual([
      { kind: 'time', ms: 30 * 60_000 },
      { kind: 'time', ms: 86_400_000 },
      { kind: 'session' },
      { kind: 'uses', uses: 10 },
      { kind: 'uses', uses: 1 },
    ]);
  });

  it('rejects bad choices with one line naming the place', () => {
    const cases: Array<[string, RegExp]> = [
      [
        'grants: { choices: [1h, forever] }',
        /routes\[0\]\.grants\.choices\[1\] must be a duration such as 1h or 8h, session, or a count such as 10 uses \(got "forever"\)/,
      ],
      [
        'grants: { choices: [0 uses] }',
        /routes\[0\]\.grants\.choices\[0\] a count of uses must be at least 1 \(got "0 uses"\)/,
      ],
      ['grants: { choices: [] }', /routes\[0\]\.grants\.choices must list at least one scope/],
      [
        'grants: { choices: [1h, 2h, 3h, 4h, 5h, 6h] }',
        /routes\[0\]\.grants\.choices must list at most 5 scopes/,
      ],
      ['grants: { choices: [1h, session, 60m] }', /routes\[0\]\.grants\.choices lists the same scope twice/],
      ['grants: { choices: 8h }', /routes\[0\]\.grants\.choices must be a list such as \[1h, 8h, session\]/],
      [
        'grants: { maxTtl: 1d, choices: [1h, 2d] }',
        /routes\[0\]\.grants\.choices\[1\] is longer than maxTtl: shorten it or raise maxTtl/,
      ],
      [
        'grants: { choices: [1h, 8d] }',
        /routes\[0\]\.grants\.choices\[1\] is longer than the maximum \(COUNTERSIGN_GRANT_MAX_TTL\)/,
      ],
    ];
    for (const [grants, message] of cases) {
      const file = configFile(`routes:\n  - channel: C0ALL\n    ${grants}\n`);
      const err = errorOf(fileEnv(file, { MSP_HOST_COMMAND: 'muse serve' }));
      expect(err.variable).toBe('COUNTERSIGN_CONFIG');
      expect(err.message).toMatch(message);
      expect(err.message).not.toContain('\n');
    }
  });

  it('refuses caller owner on a route that may match a host without an owner', () => {
    const file = configFile(
      `${hostsWith('    owner: U0ALICE\n')}routes:\n  - channel: C0ALL\n    grants: { caller: owner }\n`,
    );
    expect(errorOf(fileEnv(file)).message).toMatch(
      /routes\[0\]\.grants\.caller is owner, but host "ci" has no owner: set hosts\[\]\.owner/,
    );
  });

  it('allows caller owner when every host the route matches has an owner', () => {
    const file = configFile(
      `${hostsWith('    owner: U0ALICE\n')}routes:\n  - channel: C0ALL\n    match: { hosts: [main] }\n    grants: { caller: owner }\n`,
    );
    expect(loadConfig(fileEnv(file, { SLACK_CHANNEL: 'C0ALL' })).routes[0]?.grants).toEqual({
      caller: 'owner',
    });
  });
});

describe('risks[].match.programs', () => {
  const withRisk = (match: string) =>
    configFile(`routes:\n  - channel: C0ALL\nrisks:\n  - name: r\n    warning: w\n    match: ${match}\n`);

  it('takes program, subcommand, flags and args, each but program optional', () => {
    const file = withRisk(
      '{ programs: [{ program: git, subcommand: push, flags: [--force, -f], args: ["+*"] }, { program: dd }] }',
    );
    const config = loadConfig(fileEnv(file, { MSP_HOST_COMMAND: 'muse serve' }));
    expect(config.risks[0]?.match).toEqual({
      programs: [
        { program: 'git', subcommand: 'push', flags: ['--force', '-f'], args: ['+*'] },
        { program: 'dd' },
      ],
    });
  });

  it.each([
    ['{ programs: [] }', 'risks[0].match.programs must list at least one program'],
    ['{ programs: git }', 'risks[0].match.programs must be a list (got "git")'],
    ['{ programs: [git] }', 'risks[0].match.programs[0] must be a mapping with program'],
    ['{ programs: [{ subcommand: push }] }', 'risks[0].match.programs[0].program is required'],
    [
      '{ programs: [{ program: /usr/bin/git }] }',
      "risks[0].match.programs[0].program must be a program's name such as git, without a directory",
    ],
    [
      '{ programs: [{ program: git, subcommand: --force }] }',
      'risks[0].match.programs[0].subcommand must be one word such as push, not an option (got "--force")',
    ],
    [
      '{ programs: [{ program: git, flags: [force] }] }',
      'risks[0].match.programs[0].flags[0] must be an option such as -f or --force, without a value (got "force")',
    ],
    [
      '{ programs: [{ program: git, flags: [--force=yes] }] }',
      'risks[0].match.programs[0].flags[0] must be an option such as -f or --force, without a value',
    ],
    [
      '{ programs: [{ program: git, flags: [--] }] }',
      'risks[0].match.programs[0].flags[0] must be an option',
    ],
    [
      '{ programs: [{ program: git, flags: [] }] }',
      'risks[0].match.programs[0].flags must list at least one flag',
    ],
    [
      '{ programs: [{ program: git, args: [] }] }',
      'risks[0].match.programs[0].args must list at least one value',
    ],
    [
      '{ programs: [{ program: git, subcommands: [push] }] }',
      'risks[0].match.programs[0]: key "subcommands" is not supported (supported: program, subcommand, flags, args)',
    ],
  ])('%s is refused in one line naming its place', (match, message) => {
    const err = errorOf(fileEnv(withRisk(match), { MSP_HOST_COMMAND: 'muse serve' }));
    expect(err.variable).toBe('COUNTERSIGN_CONFIG');
    expect(err.message).toContain(message);
  });
});

describe('environment variables alone', () => {
  it('still run one host and one channel without a file', () => {
    const config = loadConfig({
      SLACK_BOT_TOKEN: FAKE_SLACK_BOT_TOKEN,
      SLACK_APP_TOKEN: FAKE_SLACK_APP_TOKEN,
      SLACK_CHANNEL: 'C0APPROVALS',
      MSP_HOST_COMMAND: 'muse serve',
      ...NO_REDIS_PASSWORD,
    });
    expect(config.msp.hosts).toEqual([{ id: 'default', command: 'muse serve', sandboxMode: 'default' }]);
    expect(config.routes).toEqual([]);
    expect(config.admins).toEqual([]);
    expect(config.slack.channel).toBe('C0APPROVALS');
  });
});

const HOST = '  - id: main\n    command: muse serve\n';
const ROUTE = '  - channel: C0ALL\n';

describe('a mistake in the file stops start-up with one line naming its place', () => {
  it.each([
    ['a host without id', 'hosts:\n  - command: muse serve\n', 'hosts[0].id is required'],
    [
      'a host id with a space',
      `hosts:\n${HOST}  - id: build box\n    command: muse serve\n`,
      'hosts[1].id must be letters, digits, ".", "_" or "-" (at most 64, got "build box")',
    ],
    ['a host without command', 'hosts:\n  - id: main\n', 'hosts[0].command is required'],
    [
      'an empty command',
      'hosts:\n  - id: main\n    command: ""\n',
      'hosts[0].command must be a non-empty string',
    ],
    [
      'a misspelt host key',
      'hosts:\n  - id: main\n    command: muse serve\n    workdir: /srv\n',
      'hosts[0]: key "workdir" is not supported (supported: id, command, sandboxMode, cwd, env, owner)',
    ],
    [
      'an owner that is a name',
      `hosts:\n${HOST}  - id: ci\n    command: muse serve\n    owner: alice\n`,
      'hosts[1].owner must be a Slack user ID such as U0123ABCD (got "alice")',
    ],
    [
      'duplicate host ids',
      `hosts:\n${HOST}${HOST}`,
      'hosts[1].id "main" is used by an earlier host: host ids must be unique',
    ],
    [
      'an empty hosts list',
      'hosts: []\n',
      'hosts must list at least one host (or leave the key out and set MSP_HOST_COMMAND)',
    ],
    [
      'env that is a list',
      'hosts:\n  - id: main\n    command: muse serve\n    env: [A=1]\n',
      'hosts[0].env must be a mapping of variable names to values (got a list)',
    ],
    [
      'an env value that is a mapping',
      'hosts:\n  - id: main\n    command: muse serve\n    env: { MUSE: { a: 1 } }\n',
      'hosts[0].env.MUSE must be a string, number or boolean (got a mapping)',
    ],
    [
      'an env name that is not a variable name',
      'hosts:\n  - id: main\n    command: muse serve\n    env: { "MUSE PROFILE": ci }\n',
      'hosts[0].env key "MUSE PROFILE" must be an environment variable name (letters, digits and _, not starting with a digit)',
    ],
    [
      'a route naming a host not in hosts',
      `hosts:\n${HOST}routes:\n  - channel: C0CI\n    match: { hosts: [main, ci] }\n`,
      'routes[0].match.hosts[1] names host "ci", which is not in hosts (main)',
    ],
    [
      'an approver that is a name',
      `routes:\n${ROUTE}  - channel: C0B\n    approvers: { users: [U0ALICE, alice] }\n`,
      'routes[1].approvers.users[1] must be a Slack user ID such as U0123ABCD (not a name or @mention) (got "alice")',
    ],
    [
      'an approver that is a @mention',
      'routes:\n  - channel: C0B\n    approvers: { users: ["@alice"] }\n',
      'routes[0].approvers.users[0] must be a Slack user ID such as U0123ABCD (not a name or @mention) (got "@alice")',
    ],
    [
      'a user group that is a handle',
      'routes:\n  - channel: C0B\n    approvers: { usergroups: [sre] }\n',
      'routes[0].approvers.usergroups[0] must be a Slack user group ID such as S0123ABCD (not a @handle) (got "sre")',
    ],
    [
      'empty approvers',
      'routes:\n  - channel: C0B\n    approvers: { users: [], usergroups: [] }\n',
      'routes[0].approvers must name at least one user or user group (or leave the key out to let the members of the channel decide)',
    ],
    [
      'approvers as a list',
      'routes:\n  - channel: C0B\n    approvers: [U0ALICE]\n',
      'routes[0].approvers must be a mapping with users and/or usergroups (got a list)',
    ],
    [
      'a misspelt approvers key',
      'routes:\n  - channel: C0B\n    approvers: { user: [U0ALICE] }\n',
      'routes[0].approvers: key "user" is not supported (supported: users, usergroups)',
    ],
    [
      'empty protectedWriteApprovers',
      'routes:\n  - channel: C0B\n    protectedWriteApprovers: {}\n',
      'routes[0].protectedWriteApprovers must name at least one user or user group (or leave the key out to let the approvers decide protected writes too)',
    ],
    [
      'protectedWrite that is not a boolean',
      'routes:\n  - channel: C0B\n    match: { protectedWrite: "yes" }\n',
      'routes[0].match.protectedWrite must be true or false (got "yes")',
    ],
    [
      'allowSelfApproval that is not a boolean',
      'routes:\n  - channel: C0B\n    allowSelfApproval: no way\n',
      'routes[0].allowSelfApproval must be true or false (got "no way")',
    ],
    [
      'an unknown rejectReason',
      'routes:\n  - channel: C0B\n    rejectReason: always\n',
      'routes[0].rejectReason must be required or optional (got "always")',
    ],
    [
      'quickReasons that are not a list',
      'routes:\n  - channel: C0B\n    quickReasons: Use a PR\n',
      'routes[0].quickReasons must be a list (got "Use a PR")',
    ],
    [
      'an empty quick reason',
      'routes:\n  - channel: C0B\n    quickReasons: [ok, ""]\n',
      'routes[0].quickReasons[1] must be a non-empty string',
    ],
    [
      'a quick reason longer than an option label',
      `routes:\n  - channel: C0B\n    quickReasons: ["${'x'.repeat(151)}"]\n`,
      'routes[0].quickReasons[0] must be at most 150 characters (a Slack option label)',
    ],
    [
      'more than ten quick reasons',
      `routes:\n  - channel: C0B\n    quickReasons: [${Array.from({ length: 11 }, (_, i) => `r${i}`).join(', ')}]\n`,
      'routes[0].quickReasons must list at most 10 reasons',
    ],
    [
      'a subject kind with a space',
      'routes:\n  - channel: C0B\n    match: { subjects: [shell, file access] }\n',
      'routes[0].match.subjects[1] must be a subject kind such as shell, fileAccess or network (got "file access")',
    ],
    [
      'an empty subjects list',
      'routes:\n  - channel: C0B\n    match: { subjects: [] }\n',
      'routes[0].match.subjects must list at least one value (or leave the key out to match anything)',
    ],
    [
      'an empty sessionTitles list',
      'routes:\n  - channel: C0B\n    match: { sessionTitles: [] }\n',
      'routes[0].match.sessionTitles must list at least one value (or leave the key out to match anything)',
    ],
    [
      'a session title pattern that is not a string',
      'routes:\n  - channel: C0B\n    match: { sessionTitles: [[deploy]] }\n',
      'routes[0].match.sessionTitles[0] must be a non-empty string (got a list)',
    ],
    [
      'duplicate route names',
      'routes:\n  - name: prod\n    channel: C0A\n    quorum: 2\n  - name: prod\n    channel: C0B\n',
      'routes[1].name "prod" is used by an earlier route: route names must be unique',
    ],
    [
      "a route named as the fallback, SLACK_CHANNEL's",
      `routes:\n  - name: "(SLACK_CHANNEL)"\n    channel: C0A\n${ROUTE}`,
      'routes[0].name "(SLACK_CHANNEL)" is reserved: names in parentheses, unnamed-… and routes[…] are Countersign\'s own, choose another',
    ],
    [
      'a route named as an unnamed one is',
      `routes:\n${ROUTE}  - name: unnamed-0a1b2c3d\n    channel: C0A\n`,
      'routes[1].name "unnamed-0a1b2c3d" is reserved: names in parentheses, unnamed-… and routes[…] are Countersign\'s own, choose another',
    ],
    [
      'a route named as earlier releases named one by its place',
      `routes:\n${ROUTE}  - name: routes[0]\n    channel: C0A\n`,
      'routes[1].name "routes[0]" is reserved: names in parentheses, unnamed-… and routes[…] are Countersign\'s own, choose another',
    ],
    ['admins that are not a list', 'admins: U0ADMIN\n', 'admins must be a list (got "U0ADMIN")'],
    [
      'an admin that is a name',
      'admins: [U0ADMIN, bob]\n',
      'admins[1] must be a Slack user ID such as U0123ABCD (not a name or @mention) (got "bob")',
    ],
  ])('%s', (_, yaml, problem) => {
    const file = configFile(yaml.includes('routes:') ? yaml : `${yaml}routes:\n${ROUTE}`);
    const err = errorOf(
      fileEnv(file, { MSP_HOST_COMMAND: yaml.includes('hosts:') ? undefined : 'muse serve' }),
    );
    expect(err.variable).toBe('COUNTERSIGN_CONFIG');
    expect(err.message).toBe(`COUNTERSIGN_CONFIG (${file}): ${problem}`);
  });

  it.each([
    [
      'an unquoted password starting with "*" (read as an alias)',
      'hosts:\n  - id: main\n    command: muse serve\n    env:\n      DB_PASSWORD: *Xk9q-S3cret-Pw\n',
      'invalid YAML: hosts[0].env.DB_PASSWORD (line 5, column 20) is an alias (a value starting with "*") that names no anchor set before it: quote the value if it is not meant as an alias',
    ],
    [
      'an env value holding a NUL byte (no process can be given it)',
      'hosts:\n  - id: main\n    command: muse serve\n    env:\n      DB_PASSWORD: "Xk9q-S3cret-Pw\\0"\nroutes:\n  - channel: C0ALL\n',
      'hosts[0].env.DB_PASSWORD contains a NUL byte, which an environment variable cannot hold: remove it',
    ],
    [
      'a whole file that is an alias',
      '*Xk9q-S3cret-Pw\n',
      'invalid YAML: the file (line 1, column 1) is an alias (a value starting with "*") that names no anchor set before it: quote the value if it is not meant as an alias',
    ],
  ])('%s: one line naming the place, never the value', (_, yaml, problem) => {
    const file = configFile(yaml);
    const err = errorOf(fileEnv(file));
    expect(err.variable).toBe('COUNTERSIGN_CONFIG');
    expect(err.message).toBe(`COUNTERSIGN_CONFIG (${file}): ${problem}`);
    expect(err.message).not.toContain('S3cret');
  });

  it('a host cwd that is not an existing directory: one line naming hosts[i].cwd', () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-cwd-'));
    const aFile = join(dir, 'notes.txt');
    writeFileSync(aFile, '');
    const missing = join(dir, 'agents-typo');
    const hosts = (cwd: string) =>
      `hosts:\n${HOST}  - id: ci\n    command: muse ci\n    cwd: ${dir}\n  - id: typo\n    command: muse\n    cwd: ${cwd}\n`;
    for (const [cwd, problem] of [
      [missing, 'does not exist'],
      [aFile, 'is not a directory'],
      [join(aFile, 'agents'), 'is not a directory'],
    ] as const) {
      const file = configFile(hosts(cwd));
      const err = errorOf(fileEnv(file, { SLACK_CHANNEL: 'C0ALL' }));
      expect(err.variable).toBe('COUNTERSIGN_CONFIG');
      expect(err.message).toBe(
        `COUNTERSIGN_CONFIG (${file}): hosts[2].cwd ${JSON.stringify(cwd)} ${problem}: create the directory or fix the path`,
      );
    }
    // An existing directory, absolute or relative to the bot's own, is taken.
    const config = loadConfig(fileEnv(configFile(`${hosts('.')}routes:\n${ROUTE}`)));
    expect(config.msp.hosts.map((h) => h.cwd)).toEqual([undefined, dir, '.']);
  });

  it('MSP_HOST_COMMAND together with hosts', () => {
    const file = configFile(`hosts:\n${HOST}routes:\n${ROUTE}`);
    const err = errorOf(fileEnv(file, { MSP_HOST_COMMAND: 'muse serve' }));
    expect(err.variable).toBe('MSP_HOST_COMMAND');
    expect(err.message).toBe(
      `MSP_HOST_COMMAND is set and COUNTERSIGN_CONFIG (${file}) lists hosts: unset MSP_HOST_COMMAND, or remove hosts from the file`,
    );
  });

  it('neither MSP_HOST_COMMAND nor hosts', () => {
    const file = configFile(`routes:\n${ROUTE}`);
    const err = errorOf(fileEnv(file));
    expect(err.variable).toBe('MSP_HOST_COMMAND');
    expect(err.message).toMatch(/^MSP_HOST_COMMAND is required: .*or list hosts in COUNTERSIGN_CONFIG$/);
  });
});

describe('risks[].confirm', () => {
  const withConfirm = (confirm: string) =>
    configFile(
      `routes:\n  - channel: C0ALL\nrisks:\n  - name: r\n    warning: w\n    match: { tools: [deploy] }\n    confirm: ${confirm}\n`,
    );

  it('takes type, and keeps it on the rule', () => {
    const config = loadConfig(fileEnv(withConfirm('type'), { MSP_HOST_COMMAND: 'muse serve' }));
    expect(config.risks[0]).toMatchObject({ name: 'r', confirm: 'type' });
  });

  it('is absent when left out', () => {
    const file = configFile(
      'routes:\n  - channel: C0ALL\nrisks:\n  - name: r\n    warning: w\n    match: { tools: [deploy] }\n',
    );
    expect(loadConfig(fileEnv(file, { MSP_HOST_COMMAND: 'muse serve' })).risks[0]).not.toHaveProperty(
      'confirm',
    );
  });

  it.each(['yes', 'true', 'click', '[type]'])('refuses %s, naming the one word it takes', (value) => {
    expect(errorOf(fileEnv(withConfirm(value), { MSP_HOST_COMMAND: 'muse serve' })).message).toContain(
      'risks[0].confirm must be type (approving then asks for the target to be typed), or left out',
    );
  });
});

describe('a glob that cannot be compiled (it would match nothing, and fail open)', () => {
  const FIX =
    'is not a valid glob, so it would match nothing (got %s): close each {, ( and [, write ranges low to high ([a-z]), and end it without a lone \\';
  const risk = (match: string) =>
    `routes:\n${ROUTE}risks:\n  - name: r\n    warning: w\n    match: ${match}\n`;

  it.each([
    ['risks[0].match.paths[1]', '"**/*.{pem,key"', risk('{ paths: ["**/.env", "**/*.{pem,key"] }')],
    ['risks[0].match.commands[0]', '"rm -rf /[a-Z]*"', risk('{ commands: ["rm -rf /[a-Z]*"] }')],
    ['risks[0].match.tools[0]', '"deploy_{a"', risk('{ tools: ["deploy_{a"] }')],
    [
      'risks[0].match.targets[0]',
      '"db.{prod,stage.example.com"',
      risk('{ targets: ["db.{prod,stage.example.com"] }'),
    ],
    [
      'risks[0].match.programs[0].args[0]',
      '"!(main"',
      risk('{ programs: [{ program: git, args: ["!(main"] }] }'),
    ],
    [
      'routes[0].match.workspaces[0]',
      '"/srv/{prod,payments/**"',
      'routes:\n  - channel: C0PROD\n    match:\n      workspaces: ["/srv/{prod,payments/**"]\n    approvers: { users: [U0SRE] }\n  - channel: C0DEV\n',
    ],
    ['routes[0].match.tools[0]', '"[z-a]"', 'routes:\n  - channel: C0A\n    match: { tools: ["[z-a]"] }\n'],
    [
      'routes[0].match.sessionTitles[0]',
      '"deploy\\\\"',
      'routes:\n  - channel: C0A\n    match: { sessionTitles: ["deploy\\\\"] }\n',
    ],
  ])('%s (%s): one line naming it', (at, pattern, yaml) => {
    const file = configFile(yaml);
    const err = errorOf(fileEnv(file, { MSP_HOST_COMMAND: 'muse serve', SLACK_CHANNEL: 'C0ALL' }));
    expect(err.message).toBe(`COUNTERSIGN_CONFIG (${file}): ${at} ${FIX.replace('%s', pattern)}`);
  });

  it('takes the globs that compile: braces, classes, extglobs, a literal [', () => {
    const file = configFile(
      risk(
        '{ paths: ["**/*.{pem,key}", "/etc/[a-z]*"], commands: ["rm -rf /*", "git push +(main|master)"], targets: ["[", "*.prod.example.com"] }',
      ),
    );
    expect(loadConfig(fileEnv(file, { MSP_HOST_COMMAND: 'muse serve' })).risks[0]?.match).toEqual({
      paths: ['**/*.{pem,key}', '/etc/[a-z]*'],
      commands: ['rm -rf /*', 'git push +(main|master)'],
      targets: ['[', '*.prod.example.com'],
    });
  });
});

describe('routes that can never match, or would match everything unseen', () => {
  it.each([
    ['match: {}', 'routes:\n  - channel: C0A\n    match: {}\n'],
    [
      'match: with its only line commented out',
      'routes:\n  - name: sandbox\n    channel: C0SANDBOX\n    match:\n      # workspaces: ["/srv/sandbox/**"]\n  - name: prod\n    channel: C0PROD\n    match: { workspaces: ["/srv/prod/**"] }\n',
    ],
  ])('%s: refused, saying to remove the key to match everything', (_, yaml) => {
    const file = configFile(yaml);
    expect(errorOf(fileEnv(file, { MSP_HOST_COMMAND: 'muse serve' })).message).toBe(
      `COUNTERSIGN_CONFIG (${file}): routes[0].match is empty, which would match every approval: list what to match, or remove the key to match everything`,
    );
  });

  it('refuses a route after one without match, naming both', () => {
    const file = configFile(
      'routes:\n  - name: tools\n    channel: C0T\n    match: { tools: [deploy] }\n  - name: everyone\n    channel: C0ALL\n  - name: prod\n    channel: C0PROD\n    match: { workspaces: ["/srv/prod/**"] }\n',
    );
    expect(errorOf(fileEnv(file, { MSP_HOST_COMMAND: 'muse serve' })).message).toBe(
      `COUNTERSIGN_CONFIG (${file}): routes[2] can never match: routes[1] catches everything (it has no match): give routes[1] a match, or move it last`,
    );
  });

  it('takes a route without match as the last one', () => {
    const file = configFile(
      'routes:\n  - channel: C0T\n    match: { tools: [deploy] }\n  - channel: C0ALL\n',
    );
    expect(loadConfig(fileEnv(file, { MSP_HOST_COMMAND: 'muse serve' })).routes).toEqual([
      { channel: 'C0T', match: { tools: ['deploy'] } },
      { channel: 'C0ALL' },
    ]);
  });
});

describe('a quorum that can never be reached', () => {
  const OWNED =
    'hosts:\n  - id: main\n    command: muse serve\n    owner: U0ALICE\n  - id: ci\n    command: muse serve\n';
  const FIX = ': name more users or a user group, or lower the quorum';

  it.each([
    [
      'a route quorum above its listed users',
      'routes:\n  - channel: C1\n    approvers: { users: [U111] }\n    quorum: 3\n',
      'routes[0] can never reach its quorum of 3: only 1 can vote (the users of routes[0].approvers and the admins)',
    ],
    [
      'admins count, but not beyond them',
      'routes:\n  - channel: C1\n    approvers: { users: [U111, U0ADMIN] }\n    quorum: 3\nadmins: [U0ADMIN]\n',
      'routes[0] can never reach its quorum of 3: only 2 can vote (the users of routes[0].approvers and the admins)',
    ],
    [
      "protected writes, the host's owner left out (the shipped example's mistake)",
      `${OWNED}routes:\n  - channel: C1\n    match: { hosts: [main] }\n    approvers: { usergroups: [S0SRE] }\n    protectedWriteApprovers: { users: [U0ALICE] }\n    quorum: 2\nadmins: [U0ADMIN]\n`,
      'routes[0] (protected writes) can never reach its quorum of 2: only 1 can vote (the users of routes[0].protectedWriteApprovers and the admins, less U0ALICE, host "main"\'s owner, who never counts toward a quorum)',
    ],
    [
      'the owner as the only approver where allowSelfApproval is false',
      `${OWNED}routes:\n  - channel: C1\n    approvers: { users: [U0ALICE] }\n    allowSelfApproval: false\n`,
      'routes[0] can never reach its quorum of 1 (the default): nobody can vote (the users of routes[0].approvers and the admins, less U0ALICE, host "main"\'s owner, as allowSelfApproval is false)',
    ],
    [
      "a risk rule's quorum above a route's listed users",
      'routes:\n  - channel: C1\n    approvers: { users: [U111, U222] }\nrisks:\n  - name: r\n    warning: w\n    match: { tools: [deploy] }\n    quorum: 3\n',
      'routes[0] where risks[0] matches can never reach the quorum of 3 of risks[0]: only 2 can vote (the users of routes[0].approvers and the admins)',
    ],
    [
      "a risk rule's quorum above its own users (admins do not count)",
      'routes:\n  - channel: C1\nrisks:\n  - name: r\n    warning: w\n    match: { tools: [deploy] }\n    approvers: { users: [U111] }\n    quorum: 2\nadmins: [U0ADMIN]\n',
      'risks[0] can never reach its quorum of 2: only 1 can vote (the users of risks[0].approvers, not the admins)',
    ],
    [
      "a route's quorum above a risk rule's users",
      'routes:\n  - channel: C1\n    match: { tools: [deploy] }\n    quorum: 3\n  - channel: C2\nrisks:\n  - name: r\n    warning: w\n    match: { tools: [deploy] }\n    approvers: { users: [U111, U222] }\n',
      'risks[0] on routes[0] can never reach the quorum of 3 of routes[0]: only 2 can vote (the users of risks[0].approvers, not the admins)',
    ],
  ])('%s: one line naming the place and the numbers', (_, yaml, problem) => {
    const file = configFile(yaml);
    const err = errorOf(fileEnv(file, yaml.includes('hosts:') ? {} : { MSP_HOST_COMMAND: 'muse serve' }));
    expect(err.message).toBe(`COUNTERSIGN_CONFIG (${file}): ${problem}${FIX}`);
  });

  it.each([
    [
      'a user group',
      'routes:\n  - channel: C1\n    approvers: { users: [U111], usergroups: [S0SRE] }\n    quorum: 3\n',
    ],
    ['the channel deciding', 'routes:\n  - channel: C1\n    quorum: 3\n'],
    [
      'enough people once the admins count',
      'routes:\n  - channel: C1\n    approvers: { users: [U111] }\n    quorum: 2\nadmins: [U0ADMIN]\n',
    ],
    [
      'an owner on a host the route cannot match',
      `${OWNED}routes:\n  - channel: C1\n    match: { hosts: [ci] }\n    approvers: { users: [U0ALICE, U0BOB] }\n    quorum: 2\n  - channel: C2\n`,
    ],
    [
      'no hosts in the file (the one host has no owner)',
      'routes:\n  - channel: C1\n    approvers: { users: [U0ALICE] }\n    allowSelfApproval: false\n',
    ],
  ])('takes a quorum that can be reached, or cannot be counted: %s', (_, yaml) => {
    const file = configFile(yaml);
    expect(() =>
      loadConfig(
        fileEnv(
          file,
          yaml.includes('hosts:') ? {} : { MSP_HOST_COMMAND: 'muse serve', SLACK_CHANNEL: 'C0ALL' },
        ),
      ),
    ).not.toThrow();
  });
});
