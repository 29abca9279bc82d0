// Risk rules and the many spellings of one request, end to end: the real bot with the shipped
// example's risk rules (countersign.example.yml), a fake host, the fake Slack and the tests' Redis.
// Each spelling of a force push, a host in capitals with its root dot, a path in capitals or
// relative to the workspace: each card must carry the rule's warning and its effect.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { PROJECT_ROOT } from '../support/bot.js';
import { type ApprovalRequestParams, shellApproval } from '../support/fakeHost.js';
import type { SlackMessage } from '../support/fakeSlack.js';
import { configFile, configYaml, mainHost, route, users } from './fixtures/config.js';
import { buttonsOf, rememberButtonOf, SESSION, textOf, World } from './world.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

/** A session whose workspace is elsewhere: a subject's own root must win over it. */
const OTHER_SESSION = '0198f0aa-2222-7000-8000-0000000000bb';

/** The risk rules as the example ships them, and two more for hosts and relative paths. */
function config(hostCommand: string): string {
  const example = parse(readFileSync(join(PROJECT_ROOT, 'countersign.example.yml'), 'utf8')) as {
    risks: unknown[];
  };
  const risks = [
    ...example.risks,
    { name: 'production', match: { targets: ['*.prod.example.com'] }, warning: 'Production' },
    { name: 'app-config', match: { paths: ['/srv/app/config/**'] }, warning: 'App config' },
  ];
  return configYaml({
    hosts: [mainHost(hostCommand, { owner: 'U0OWNER' })],
    routes: [route('everyday', { approvers: users('U0ALICE', 'U0BOB') })],
    risks,
  });
}

async function startWorld(): Promise<World> {
  const world = await World.start(
    {
      sessions: [
        { sessionId: SESSION, title: 'Release', workspaceRoot: '/srv/app' },
        { sessionId: OTHER_SESSION, title: 'Docs', workspaceRoot: '/srv/other' },
      ],
    },
    (host) => {
      const file = configFile(config(host.command));
      cleanups.push(file.remove);
      return { COUNTERSIGN_CONFIG: file.path, MSP_HOST_COMMAND: '' };
    },
  );
  cleanups.push(() => world.close());
  return world;
}

function shell(approvalId: string, argv: string[]): ApprovalRequestParams {
  return shellApproval({ approvalId, sessionId: SESSION, stages: [argv], workspaceRoot: '/srv/app' });
}

function fileWrite(approvalId: string, path: string, sessionId = SESSION, workspaceRoot?: string) {
  return {
    ...shellApproval({ approvalId, sessionId, stages: [['true']] }),
    toolName: 'write_file',
    rawArgs: JSON.stringify({ path }),
    subject: { kind: 'fileAccess', path, access: 'write', ...(workspaceRoot ? { workspaceRoot } : {}) },
  };
}

async function openCard(world: World, approval: ApprovalRequestParams): Promise<SlackMessage> {
  await world.host.open(approval);
  return world.waitForCard(approval.approvalId, (m) => buttonsOf(m).length > 0);
}

const FORCE_PUSH = ':warning: *Rewrites shared history* (risk rule `force-push`)';

describe('the shipped force-push rule', () => {
  it('every spelling of a force push gets the warning, two approvers and no "don\'t ask again"', async () => {
    const world = await startWorld();
    const spellings: Array<[string, string[]]> = [
      ['fp-plain', ['git', 'push', '--force']],
      ['fp-last', ['git', 'push', 'origin', 'main', '--force']],
      ['fp-short', ['git', 'push', '-f']],
      ['fp-refspec', ['git', 'push', 'origin', '+main']],
      ['fp-path', ['/usr/bin/git', 'push', '--force']],
    ];
    for (const [id, argv] of spellings) {
      const card = await openCard(world, shell(id, argv));
      expect(textOf(card), argv.join(' ')).toContain(FORCE_PUSH);
      expect(textOf(card), argv.join(' ')).toContain('Needs 2 approvals');
      expect(rememberButtonOf(card), argv.join(' ')).toBeUndefined();
    }
    const audit = await world.auditEntries();
    for (const [id] of spellings) {
      expect(audit).toContainEqual(
        expect.objectContaining({ kind: 'risk', approvalId: id, rule: 'force-push', quorum: '2' }),
      );
    }

    // A host that sends only the command text: it is split as the shell would, wrappers and all.
    const textOnly = shell('fp-text', ['true']);
    textOnly.subject = {
      kind: 'shell',
      command: 'cd /srv/app && sudo -u deploy git push origin main --force',
      workspaceRoot: '/srv/app',
    };
    expect(textOf(await openCard(world, textOnly))).toContain(FORCE_PUSH);

    // A command substitution is a command of its own, and hides no flag written after it.
    const substituted = shell('fp-substituted', ['true']);
    substituted.subject = {
      kind: 'shell',
      command: 'git push origin $(git branch --show-current) --force',
      workspaceRoot: '/srv/app',
    };
    expect(textOf(await openCard(world, substituted))).toContain(FORCE_PUSH);

    // Text that cannot be split as a shell would could run anything: it is treated as matching.
    const unreadable = shell('fp-unreadable', ['true']);
    unreadable.subject = { kind: 'shell', command: 'git push origin ${', workspaceRoot: '/srv/app' };
    expect(textOf(await openCard(world, unreadable))).toContain(FORCE_PUSH);

    // A push that rewrites nothing is left alone, and keeps its "don't ask again".
    const plain = await openCard(world, shell('fp-none', ['git', 'push', 'origin', 'main']));
    expect(textOf(plain)).not.toContain('risk rule');
    expect(rememberButtonOf(plain)).toBeDefined();
  });
});

describe('targets', () => {
  it('a host in capitals with its root dot is the host the rule names', async () => {
    const world = await startWorld();
    const approval = {
      ...shell('host-dot', ['true']),
      toolName: 'fetch',
      subject: { kind: 'network', host: 'API.Prod.Example.COM.', port: 443, protocol: 'https' },
    };
    expect(textOf(await openCard(world, approval))).toContain(
      ':warning: *Production* (risk rule `production`)',
    );
    const staging = {
      ...shell('host-staging', ['true']),
      toolName: 'fetch',
      subject: { kind: 'network', host: 'api.staging.example.com.', port: 443, protocol: 'https' },
    };
    expect(textOf(await openCard(world, staging))).not.toContain('risk rule');
  });
});

describe('paths', () => {
  const APP_CONFIG = ':warning: *App config* (risk rule `app-config`)';

  it('a relative path is resolved against the workspace root: the subject’s own, else the session’s', async () => {
    const world = await startWorld();
    expect(textOf(await openCard(world, fileWrite('rel-session', 'config/prod.yml')))).toContain(APP_CONFIG);
    expect(textOf(await openCard(world, fileWrite('rel-dots', './docs/../config/prod.yml')))).toContain(
      APP_CONFIG,
    );
    expect(textOf(await openCard(world, fileWrite('rel-docs', 'docs/readme.md')))).not.toContain('risk rule');
    // The subject names its own root, which wins over the session's.
    const own = fileWrite('rel-own', 'config/prod.yml', OTHER_SESSION, '/srv/app');
    expect(textOf(await openCard(world, own))).toContain(APP_CONFIG);
    const elsewhere = fileWrite('rel-elsewhere', 'config/prod.yml', SESSION, '/srv/other');
    expect(textOf(await openCard(world, elsewhere))).not.toContain('risk rule');
  });

  it('a path in another case is the file the rule names (macOS, Windows)', async () => {
    const world = await startWorld();
    expect(textOf(await openCard(world, fileWrite('case-abs', '/SRV/App/Config/prod.yml')))).toContain(
      APP_CONFIG,
    );
    expect(textOf(await openCard(world, fileWrite('case-rel', 'CONFIG/prod.yml')))).toContain(APP_CONFIG);
    expect(
      textOf(await openCard(world, fileWrite('case-other', '/SRV/Other/Config/prod.yml'))),
    ).not.toContain('risk rule');
  });

  it('a later question with a relative path is resolved against the session’s root too', async () => {
    const world = await startWorld();
    const id = 'rel-update';
    const first = await openCard(world, fileWrite(id, '/srv/app/README.md'));
    expect(textOf(first)).not.toContain('risk rule');
    const ask = (path: string) =>
      world.host.update({
        approvalId: id,
        patch: { subject: { kind: 'fileAccess', path, access: 'write' } },
        change: { kind: 'subjectChanged' },
      });
    // Read with no root, a relative path could lie below /srv/app/config; with the session's, not.
    await ask('docs/readme.md');
    const docs = await world.waitForCard(id, (m) => textOf(m).includes('docs/readme.md'));
    expect(textOf(docs)).not.toContain('risk rule');
    await ask('config/prod.yml');
    await world.waitForCard(id, (m) => textOf(m).includes(APP_CONFIG));
  });
});
