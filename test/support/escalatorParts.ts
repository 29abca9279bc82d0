import { pino } from 'pino';
import type { ApprovalRecord } from '../../src/domain/record.js';
import type { Decider } from '../../src/relay/deciding/decider.js';
import { OncallResolver } from '../../src/relay/escalation/oncall.js';
import type { RecordKeeper } from '../../src/relay/records/recordKeeper.js';
import type { Mutation } from '../../src/store/approvalStore.js';

const silent = pino({ level: 'silent' });

/**
 * What an Escalator is given that a test of its schedule never reaches: no decider, an on-call
 * source naming nobody, and nobody who may decide (so no DM goes out). Spread first; a test sets
 * what it uses after.
 */
export function quietEscalatorParts() {
  return {
    decider: {} as Decider,
    oncall: new OncallResolver({ groups: { members: async () => new Set<string>() }, logger: silent }),
    oncallOf: () => undefined,
    approversOf: () => undefined,
    mayDecide: async () => ({ allowed: false, why: 'unverified', route: '(none)', what: 'user' }) as const,
    dmMappingTtlMs: 1_000,
    logger: silent,
  };
}

/**
 * Records in `records`, written as RecordKeeper writes them, each record written (or left as it
 * was) told to the escalator `escalator()` gives, as RecordKeeper tells its followers: `keeper`
 * for the escalator, `write` for a test's own writes.
 */
export function followedRecords(
  records: Map<string, ApprovalRecord>,
  escalator: () => { follow(record: ApprovalRecord): void },
) {
  const write = (approvalId: string, mutation: Mutation): ApprovalRecord | undefined => {
    const current = records.get(approvalId);
    const next = current && mutation(current);
    if (next) records.set(approvalId, next);
    const written = next ?? current;
    if (written) escalator().follow(written);
    return written;
  };
  const keeper = {
    mutateAndSync: async (approvalId: string, mutation: Mutation) => write(approvalId, mutation),
  } as unknown as RecordKeeper;
  return { keeper, write };
}
