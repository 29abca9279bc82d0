// A host speaks only of its own approvals: an update under another host's approvalId changes
// nothing of that record, not even the risk rules its question would match. The handler is
// real; the keeper runs each mutation against a record of host "main" and keeps what it returned.

import pino from 'pino';
import { expect, it } from 'vitest';
import type { ApprovalRecord, RiskMark } from '../../../../src/domain/record.js';
import type { HostEvent } from '../../../../src/msp/events.js';
import { ApprovalRequestParams } from '../../../../src/msp/protocol.js';
import type { Decider } from '../../../../src/relay/deciding/decider.js';
import { HostEventHandler } from '../../../../src/relay/hostEvents/hostEventHandler.js';
import type { RecordKeeper } from '../../../../src/relay/records/recordKeeper.js';
import { FOR_HOST, type Mutation, type WriteOptions } from '../../../../src/store/approvalRecords.js';
import type { ApprovalStore } from '../../../../src/store/approvalStore.js';
import { shellApproval } from '../../../support/fakeHost.js';
import { sampleRecord } from '../../../support/sampleRecord.js';

const RISK: RiskMark = { name: 'prod-delete', warning: 'Deletes production' };

/**
 * The real handler over a keeper that runs each mutation against `stored` and tells `mutated` of
 * it, with what it returned and the write's options.
 */
function handlerOver(
  stored: ApprovalRecord,
  mutated: (next: ApprovalRecord | undefined, options?: WriteOptions) => void,
  risksFor: () => RiskMark[],
): HostEventHandler {
  const work: Promise<unknown>[] = [];
  const keeper = {
    enqueue: (_id: string, task: () => Promise<unknown>) => void work.push(task()),
    track: (task: Promise<unknown>) => void work.push(task),
    mutate: async (_id: string, mutation: Mutation, _known?: ApprovalRecord, options?: WriteOptions) => {
      const next = mutation(stored);
      mutated(next, options);
      return next ?? stored;
    },
    idle: async () => {
      while (work.length > 0) await Promise.all(work.splice(0));
    },
  } as unknown as RecordKeeper;
  return new HostEventHandler({
    keeper,
    store: { knows: () => true, saveFullText: async () => {} } as unknown as ApprovalStore,
    decider: {} as Decider,
    host: () => undefined,
    logger: pino({ level: 'silent' }),
    routeFor: () => ({ name: 'r', channel: 'C0R' }),
    sandboxModeOf: () => 'default',
    risksFor,
  });
}

it("another host's update of an approval marks no risk rule on it, nor changes it", async () => {
  const stored = sampleRecord('xh-0001', { hostId: 'main' });
  const results: Array<ApprovalRecord | undefined> = [];
  // Every question matches the rule: only the host check keeps it off another host's record.
  const relay = handlerOver(
    stored,
    (next) => results.push(next),
    () => [RISK],
  );
  const params = ApprovalRequestParams.parse(
    shellApproval({
      approvalId: 'xh-0001',
      sessionId: stored.sessionId,
      stages: [['rm', '-rf', '/srv/prod']],
    }),
  );
  const event: HostEvent = {
    type: 'approvalUpdated',
    hostId: 'sandbox',
    incarnation: 'inc-sandbox',
    params: { ...params, change: { kind: 'subjectChanged' } },
  } as unknown as HostEvent;
  relay.handleHostEvent(event);
  await relay.idle();
  expect(results).toEqual([undefined]);
});

it("every write a host's event makes is made for the host: only under its lease", async () => {
  const stored = sampleRecord('xh-0002', { hostId: 'main' });
  const writes: Array<WriteOptions | undefined> = [];
  const relay = handlerOver(
    stored,
    (_next, options) => writes.push(options),
    () => [],
  );
  const params = ApprovalRequestParams.parse(
    shellApproval({ approvalId: 'xh-0002', sessionId: stored.sessionId, stages: [['ls']] }),
  );
  relay.handleHostEvent({
    type: 'approvalUpdated',
    hostId: 'main',
    incarnation: 'inc-main',
    params: { ...params, change: { kind: 'subjectChanged' } },
  } as unknown as HostEvent);
  relay.handleHostEvent({
    type: 'approvalResolved',
    hostId: 'main',
    incarnation: 'inc-main',
    params: { approvalId: 'xh-0002', decision: 'approved' },
  } as unknown as HostEvent);
  await relay.idle();
  // A replica that lost the lease after these were queued must not write them unfenced.
  expect(writes).toEqual([FOR_HOST, FOR_HOST]);
});
