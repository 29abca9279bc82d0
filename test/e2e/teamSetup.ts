// What the /countersign and App Home tests share: a COUNTERSIGN_CONFIG with restricted routes,
// approvals routed by tool, and the signed requests a user sends (a command, opening the Home).

import { expect } from 'vitest';
import { SIGNING_SECRET } from '../support/bot.js';
import { type ApprovalRequestParams, shellApproval } from '../support/fakeHost.js';
import type { ResponseUrlPost } from '../support/fakeSlack.js';
import { postEvent, postSlashCommand } from '../support/slackRequests.js';
import { configFile, configYaml, route, users } from './fixtures/config.js';
import { SESSION, World } from './world.js';

/**
 * deploys: Alice or the SRE group, protected writes Alice only; shell: Bob only; everything else
 * goes to SLACK_CHANNEL, where anyone may decide. Ada is an admin; Eve is nobody in particular.
 */
export const TEAM_CONFIG = configYaml({
  routes: [
    route('deploys', {
      channel: 'C0DEPLOYS',
      match: { tools: ['deploy'] },
      approvers: { users: ['U0ALICE'], usergroups: ['S0SRE'] },
      protectedWriteApprovers: users('U0ALICE'),
    }),
    route('shell', { channel: 'C0SHELL', match: { tools: ['shell'] }, approvers: users('U0BOB') }),
  ],
  admins: ['U0ADA'],
});

/** A one-stage shell approval whose tool is `toolName` (the routes above match on it). */
/** A world running TEAM_CONFIG; `cleanups` (run after each test) removes both. */
export async function startTeamWorld(cleanups: Array<() => Promise<unknown> | unknown>): Promise<World> {
  const config = configFile(TEAM_CONFIG);
  cleanups.push(config.remove);
  const world = await World.start({}, { COUNTERSIGN_CONFIG: config.path });
  cleanups.push(() => world.close());
  return world;
}

export function approvalFor(
  approvalId: string,
  toolName: string,
  opts: { command?: string[]; protectedWrite?: boolean } = {},
): ApprovalRequestParams {
  return {
    ...shellApproval({
      approvalId,
      sessionId: SESSION,
      stages: [opts.command ?? ['make', approvalId]],
      ...(opts.protectedWrite ? { protectedWrite: true } : {}),
    }),
    toolName,
  };
}

let commands = 0;

/**
 * Types `/countersign <text>` as `userId` (in `channelId`, else the approvals channel); resolves
 * with the HTTP answer and the response_url id.
 */
export async function typeCommand(
  world: World,
  userId: string,
  text: string,
  channelId?: string,
): Promise<{ status: number; body: string; responseId: string }> {
  commands += 1;
  const responseId = `cmd-${userId}-${commands}`;
  const response = await postSlashCommand(world.bot.url, SIGNING_SECRET, {
    userId,
    text,
    responseUrl: world.slack.responseUrl(responseId),
    ...(channelId ? { channelId } : {}),
  });
  return { status: response.status, body: await response.text(), responseId };
}

/** The answer of a command that looks something up: an empty ack, then a post to its response_url. */
export async function commandAnswer(
  world: World,
  userId: string,
  text: string,
  channelId?: string,
): Promise<ResponseUrlPost> {
  const { status, body, responseId } = await typeCommand(world, userId, text, channelId);
  expect(status).toBe(200);
  expect(body).toBe('');
  const answer = await world.slack.waitForResponse((r) => r.id === responseId);
  expect(answer.body.response_type).toBe('ephemeral');
  return answer;
}

/** Opens the app's Home tab as `userId`. */
export async function openHome(world: World, userId: string): Promise<void> {
  const response = await postEvent(world.bot.url, SIGNING_SECRET, {
    type: 'app_home_opened',
    user: userId,
    channel: `D${userId}`,
    tab: 'home',
    event_ts: `${(Date.now() / 1000).toFixed(6)}`,
  });
  expect(response.status).toBe(200);
}
