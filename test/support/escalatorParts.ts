import { pino } from 'pino';
import type { Decider } from '../../src/relay/deciding/decider.js';
import { OncallResolver } from '../../src/relay/escalation/oncall.js';

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
