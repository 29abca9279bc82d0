// Risk rules and the many spellings of one request, end to end: the real bot with the shipped
// example's risk rules (countersign.example.yml), a fake host, the fake Slack and the tests' Redis.
// A host in capitals with its root dot: the card must carry the rule's warning.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { PROJECT_ROOT } from '../support/bot.js';
import { type ApprovalRequestParams, shellApproval } from '../support/fakeHost.js';
import type { SlackMessage } from '../support/fakeSlack.js';
import { configFile } from './teamSetup.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

/** The risk rules as the example ships them, and one more for hosts. */
function config(hostCommand: string): string {
  const example = parse(readFileSync(join(PROJECT_ROOT, 'countersign.example.yml'), 'utf8')) as {
    risks: unknown[];
  };
  const risks = [
    ...example.risks,
    { name: 'production', match: { targets: ['*.prod.example.com'] }, warning: 'Production' },
  ];
  return stringify({
    hosts: [{ id: 'main', command: hostCommand, owner: 'U0OWNER' }],
    routes: [{ name: 'everyday', channel: 'C0APPROVALS', approvers: { users: ['U0ALICE', 'U0BOB'] } }],
    risks,
  });
}

async function startWorld(): Promise<World> {
  const world = await World.start(
    { sessions: [{ sessionId: SESSION, title: 'Release', workspaceRoot: '/srv/app' }] },
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

async function openCard(world: World, approval: ApprovalRequestParams): Promise<SlackMessage> {
  await world.host.open(approval);
  return world.waitForCard(approval.approvalId, (m) => buttonsOf(m).length > 0);
}

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
