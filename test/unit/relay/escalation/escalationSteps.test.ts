// What a DM and a page carry, and to whom: a DM goes to someone who may decide the approval (the
// check a click gets), never one who may only read its card; a page carries no request text
// unless its step says so.

import { type Logger, pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Authorization } from '../../../../src/domain/authorization.js';
import type { EscalationDm } from '../../../../src/domain/escalationNotice.js';
import type { ApprovalRecord } from '../../../../src/domain/record.js';
import type { Approvers, EscalationStep, OncallSource } from '../../../../src/domain/route.js';
import type { TriggerEvent } from '../../../../src/pagerduty/pagerDuty.js';
import type { Decider } from '../../../../src/relay/deciding/decider.js';
import { EscalationSteps, NobodyMaySee } from '../../../../src/relay/escalation/escalationSteps.js';
import { lineageOf } from '../../../../src/relay/escalation/lineage.js';
import { OncallResolver } from '../../../../src/relay/escalation/oncall.js';
import type { ApprovalStore } from '../../../../src/store/approvalStore.js';
import type { EscalationStore, PagedService } from '../../../../src/store/escalationStore.js';
import { captureLogger } from '../../../support/logCapture.js';
import { sampleRecord } from '../../../support/sampleRecord.js';
import { until } from '../../../support/until.js';

const silent = pino({ level: 'silent' });

/** A shell request of host `buildbox` on route `prod`, its card in a private channel. */
function record(overrides: Partial<ApprovalRecord> = {}): ApprovalRecord {
  return sampleRecord('a1', {
    hostId: 'buildbox',
    sessionTitle: 'Rotate the payroll keys',
    toolCallId: 'call_1',
    tool: 'bash',
    rawArgs: '{"command":"make deploy"}',
    subject: { kind: 'shell', command: 'make deploy' },
    requiredCapabilities: [],
    availableChoices: [
      { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
      { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once', acceptsFeedback: true },
    ],
    route: 'prod',
    slack: { channel: 'C0PRIVATE', ts: '1.1' },
    ...overrides,
  });
}

const refused = (why: 'notRiskApprover' | 'notApprover'): Authorization =>
  why === 'notApprover'
    ? {
        allowed: false,
        why,
        route: 'prod',
        approvers: { users: [], usergroups: ['S0SRE'] },
        protectedWrite: false,
      }
    : { allowed: false, why, route: 'prod', risk: 'force-push', approvers: { users: [], usergroups: [] } };

interface Fixture {
  oncall?: OncallSource;
  approvers?: Approvers;
  /** Who may decide the approval; everyone else in `readers` may only read it. */
  deciders: string[];
  readers?: string[];
  /** How the store maps a DM's buttons to the approval (by default, at once). */
  mapMessage?: () => Promise<void>;
  logger?: Logger;
}

/**
 * `late`: the request ended while the trigger was on its way, and `stop`, if given, is aborted as
 * the trigger lands; with `after`, only the approval's record, read again, says so (its lineage
 * still reads as live); with `dies`, the process dies as the resolve is sent (it never settles).
 * `resolves` and `leases` say what became of the resolve that follows:
 * `leases`, in order, what the schedule was told of it, and when each resolve went.
 */
function steps(fixture: Fixture, late?: { stop?: AbortController; after?: ApprovalRecord; dies?: boolean }) {
  const dms: string[] = [];
  const pages: TriggerEvent[] = [];
  const resolves: string[] = [];
  const leases: string[] = [];
  const groups: Record<string, string[]> = {
    S0ONCALL: ['U0ONCALL', 'U0SECOND'],
    S0SECURITY: ['U0SEC'],
  };
  const readers = new Set([...(fixture.readers ?? []), ...fixture.deciders]);
  // Both checks, as the Authorizer answers them: the channel's members may read the card, only
  // the approvers may decide it.
  const authorizer = {
    mayRead: async (userId: string): Promise<Authorization> =>
      readers.has(userId)
        ? { allowed: true, because: 'channelMember', channel: 'C0PRIVATE' }
        : refused('notApprover'),
    mayDecide: async (userId: string): Promise<Authorization> =>
      fixture.deciders.includes(userId) ? { allowed: true, because: 'user' } : refused('notRiskApprover'),
  };
  const escalationSteps = new EscalationSteps(
    {
      schedule: {
        paged: async () => true,
        ended: async () => late !== undefined && late.after === undefined,
        handOnResolve: async (
          lineage: string,
          by: { approvalId: string; dedupKey: string },
          service: PagedService,
          atMs: number,
        ) => {
          leases.push(`hand on ${lineage} ${by.approvalId} ${by.dedupKey} ${service.routingKey} due ${atMs}`);
        },
        leaseResolve: async (lineage: string, approvalId: string, atMs: number) => {
          leases.push(`lease ${lineage} ${approvalId} due ${atMs}`);
        },
        resolvedPages: async (lineage: string, services: PagedService[]) => {
          leases.push(`settled ${lineage} ${services.map((s) => s.routingKey).join(' ')}`);
        },
      } as unknown as EscalationStore,
      store: {
        mapMessage: fixture.mapMessage ?? (async () => undefined),
        get: async () => late?.after ?? record(),
      } as unknown as ApprovalStore,
      decider: {} as Decider,
      slack: {
        threadReply: async () => undefined,
        directMessage: async (userId: string, _dm: EscalationDm) => {
          dms.push(userId);
          return { channel: `D${userId}`, ts: '2.2' };
        },
        permalink: async () => 'https://slack.example/archives/C0PRIVATE/p11',
        nameOf: async (userId: string) => userId.toLowerCase(),
      },
      pager: {
        trigger: async (event) => {
          pages.push(event);
          // The stop comes as the trigger lands: the resolve that follows is cut short.
          late?.stop?.abort(new Error('stopping'));
        },
        resolve: async (_routingKey, dedupKey, signal) => {
          leases.push('resolve sent');
          if (late?.dies) return new Promise<void>(() => {});
          signal?.throwIfAborted();
          resolves.push(dedupKey);
        },
      },
      oncall: new OncallResolver({
        groups: { members: async (id: string) => new Set(groups[id] ?? []) },
        logger: silent,
      }),
      oncallOf: () => fixture.oncall,
      approversOf: () => fixture.approvers,
      defaultRoutingKey: 'R0UTINGKEY',
      dmMappingTtlMs: 1_000,
      ...authorizer,
      logger: fixture.logger ?? silent,
    },
    () => undefined,
    () => LEASE_UNTIL,
    LEASE_UNTIL,
  );
  return { escalationSteps, dms, pages, resolves, leases };
}

/** When a resolve's lease, taken now, runs out. */
const LEASE_UNTIL = 180_000;

const DM: EscalationStep = { afterMs: 0, action: 'dm', target: 'oncall' };
const PAGE: EscalationStep = { afterMs: 0, action: 'page' };

describe('an escalation DM', () => {
  // A force-push risk rule names the security group; the route's on-call group is in the channel.
  const forcePush = {
    oncall: { kind: 'usergroup', usergroup: 'S0ONCALL' },
    approvers: { users: [], usergroups: ['S0SECURITY'] },
    deciders: ['U0SEC'],
    readers: ['U0ONCALL', 'U0SECOND'],
  } satisfies Fixture;

  it('passes by an on-call channel member who may read but not decide, and reaches the approvers', async () => {
    const { escalationSteps, dms } = steps(forcePush);
    const done = await escalationSteps.act(record(), DM, 60_000);
    expect(dms).toEqual(['U0SEC']);
    expect(done.who).toBe('@u0sec');
  });

  it('goes to the first on-call person who may decide, before the approvers', async () => {
    const { escalationSteps, dms } = steps({ ...forcePush, deciders: ['U0SECOND', 'U0SEC'] });
    await escalationSteps.act(record(), DM, 60_000);
    expect(dms).toEqual(['U0SECOND']);
  });

  it('with nobody who may decide to reach, reaches nobody and says so (the next step falls due)', async () => {
    const { escalationSteps, dms } = steps({ ...forcePush, deciders: [] });
    const step = escalationSteps.act(record(), DM, 60_000);
    await expect(step).rejects.toBeInstanceOf(NobodyMaySee);
    await expect(step).rejects.toMatchObject({ refused: ['U0ONCALL', 'U0SECOND', 'U0SEC'] });
    expect(dms).toEqual([]);
  });

  it('a step naming its own target who may not decide reaches nobody', async () => {
    const { escalationSteps, dms } = steps(forcePush);
    await expect(
      escalationSteps.act(record(), { afterMs: 0, action: 'dm', target: 'U0ONCALL' }, 60_000),
    ).rejects.toBeInstanceOf(NobodyMaySee);
    expect(dms).toEqual([]);
  });
});

describe("an escalation DM's buttons", () => {
  const deciding = { deciders: ['U0SEC'], approvers: { users: ['U0SEC'], usergroups: [] } } satisfies Fixture;

  it('are mapped again when Redis fails the first write: the DM reached someone, the step did not fail', async () => {
    let maps = 0;
    const { escalationSteps, dms } = steps({
      ...deciding,
      mapMessage: async () => {
        if (++maps === 1) throw new Error('Connection is closed.');
      },
    });
    const done = await escalationSteps.act(record(), DM, 60_000);
    expect(maps).toBe(2);
    expect(dms).toEqual(['U0SEC']);
    expect(done.who).toBe('@u0sec');
  });

  it('never mapped, still count the DM as sent, and a warn line says its buttons will not decide', async () => {
    let maps = 0;
    const { logger, lines } = captureLogger('info');
    const { escalationSteps, dms } = steps({
      ...deciding,
      logger,
      mapMessage: async () => {
        maps += 1;
        throw new Error('Connection is closed.');
      },
    });
    const done = await escalationSteps.act(record(), DM, 60_000);
    expect(maps).toBe(3);
    expect(dms).toEqual(['U0SEC']);
    expect(done.who).toBe('@u0sec');
    expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual([
      "escalation DM sent, but its buttons could not be tied to the approval: a press in it won't decide",
    ]);
  });
});

describe('a page', () => {
  const paging = { deciders: ['U0SEC'] } satisfies Fixture;

  /** The late resolve leased until LEASE_UNTIL, before it is sent. */
  const leased = `hand on ${lineageOf(record())} a1 a1 R0UTINGKEY due ${LEASE_UNTIL}`;

  it('whose trigger lands after its request ended is resolved again at once, leased until it settles', async () => {
    const { escalationSteps, resolves, leases } = steps(paging, {});
    await escalationSteps.act(record(), PAGE, 60_000);
    expect(resolves).toEqual(['a1']);
    expect(leases).toEqual([leased, 'resolve sent', `settled ${lineageOf(record())} R0UTINGKEY`]);
  });

  it('whose late resolve a stop cuts short hands it on, due at once, for the next process', async () => {
    const stop = new AbortController();
    const { escalationSteps, resolves, leases } = steps(paging, { stop });
    await escalationSteps.act(record(), PAGE, 60_000, stop.signal);
    expect(resolves).toEqual([]);
    expect(leases).toEqual([leased, 'resolve sent', `lease ${lineageOf(record())} a1 due 0`]);
  });

  it('whose late resolve is on its way as its process dies leaves it to whoever takes the lease', async () => {
    const { escalationSteps, leases } = steps(paging, { dies: true });
    void escalationSteps.act(record(), PAGE, 60_000);
    await until(() => leases.includes('resolve sent'));
    expect(leases).toEqual([leased, 'resolve sent']);
  });

  it('whose approval was decided while the trigger was on its way is resolved, its lineage read live or not', async () => {
    const decided = record({
      phase: 'resolved',
      resolution: { decision: 'approved', resolvedBy: 'user', decidedAt: 'now' },
    });
    const { escalationSteps, resolves } = steps(paging, { after: decided });
    await escalationSteps.act(record(), PAGE, 60_000);
    expect(resolves).toEqual(['a1']);
  });

  it('whose approval was asked again on another route while the trigger was on its way is resolved', async () => {
    // Nobody may decide it from its card any more (recordMutations.rerouted): nobody paged can act.
    const reasked = record({
      phase: 'unavailable',
      unavailable: 'routeChanged',
      rerouted: { change: 'route', from: 'prod', to: 'dev' },
    });
    const { escalationSteps, resolves } = steps(paging, { after: reasked });
    await escalationSteps.act(record(), PAGE, 60_000);
    expect(resolves).toEqual(['a1']);
  });

  it('whose approval was superseded while the trigger was on its way is left to its successor', async () => {
    const { escalationSteps, resolves } = steps(paging, { after: record({ phase: 'superseded' }) });
    await escalationSteps.act(record(), PAGE, 60_000);
    expect(resolves).toEqual([]);
  });

  it('whose request is still open is not resolved', async () => {
    const { escalationSteps, resolves } = steps(paging);
    await escalationSteps.act(record(), PAGE, 60_000);
    expect(resolves).toEqual([]);
  });

  it('by default carries no request text: the route, the tool, the wait, and where the card is', async () => {
    const { escalationSteps, pages } = steps(paging);
    const done = await escalationSteps.act(
      record({ title: 'Deploy the payroll service' }),
      PAGE,
      45 * 60_000,
    );
    expect(done.who).toBe('PagerDuty');
    const [page] = pages;
    expect(page?.summary).toBe('Approval waiting on route prod: bash, 45 min');
    expect(page?.customDetails).toEqual({
      approvalId: 'a1',
      route: 'prod',
      host: 'buildbox',
      card: 'https://slack.example/archives/C0PRIVATE/p11',
      age: '45 min',
      ageSeconds: 2_700,
    });
    const sent = JSON.stringify(page);
    for (const secret of ['make deploy', 'payroll', 's-1']) expect(sent).not.toContain(secret);
  });

  it('marks hidden characters in the tool name, and cuts a long one', async () => {
    const { escalationSteps, pages } = steps(paging);
    await escalationSteps.act(record({ tool: `ba\u202Esh\n${'x'.repeat(200)}` }), PAGE, 1_000);
    const summary = pages[0]!.summary;
    expect(summary).toContain('ba⟨U+202E⟩sh x');
    expect(summary).not.toContain('\u202E');
    expect(summary.length).toBeLessThan(200);
  });

  it('with includeRequest carries the command and the session title, hidden characters marked', async () => {
    const { escalationSteps, pages } = steps(paging);
    await escalationSteps.act(
      record({
        subject: { kind: 'shell', command: 'make\u202E deploy\n--prod' },
        sessionTitle: 'Rotate\u200B keys',
      }),
      { ...PAGE, includeRequest: true },
      60_000,
    );
    const [page] = pages;
    expect(page?.summary).toBe('Approval waiting on route prod: bash, 1 min — make⟨U+202E⟩ deploy --prod');
    expect(page?.customDetails).toMatchObject({
      approvalId: 'a1',
      sessionId: 's-1',
      sessionTitle: 'Rotate⟨U+200B⟩ keys',
    });
  });

  it('with includeRequest, a request that is not a shell command is named by its title', async () => {
    const { escalationSteps, pages } = steps(paging);
    await escalationSteps.act(
      record({
        subject: { kind: 'network', host: 'example.com', port: 443, protocol: 'https' },
        title: 'Fetch',
      }),
      { ...PAGE, includeRequest: true },
      60_000,
    );
    expect(pages[0]?.summary).toBe('Approval waiting on route prod: bash, 1 min — Fetch');
  });
});
