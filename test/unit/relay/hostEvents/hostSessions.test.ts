// What the HostEventHandler remembers of each session a host announces (sessionSeen), and what
// an approval of that session then gets from it: its route, its card's label and the workspace
// its relative paths are read against. The handler is real; the keeper and store record what they
// are handed, the routes are a real Router.

import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { ApprovalRecord } from '../../../../src/domain/record.js';
import type { Route } from '../../../../src/domain/route.js';
import type { HostEvent } from '../../../../src/msp/events.js';
import { ApprovalRequestParams } from '../../../../src/msp/protocol.js';
import type { Decider } from '../../../../src/relay/deciding/decider.js';
import { HostEventHandler } from '../../../../src/relay/hostEvents/hostEventHandler.js';
import type { RecordKeeper } from '../../../../src/relay/records/recordKeeper.js';
import type { RiskInput } from '../../../../src/routing/risks.js';
import { type RouteInput, Router } from '../../../../src/routing/router.js';
import type { ApprovalStore } from '../../../../src/store/approvalStore.js';
import { shellApproval } from '../../../support/fakeHost.js';
import { AWS_EXAMPLE_KEY } from '../../../support/fakeSecrets.js';

const ROUTES: Route[] = [
  { name: 'prod-sessions', channel: 'C0PRODTITLE', match: { sessionTitles: ['prod*'] } },
  { name: 'prod-workspaces', channel: 'C0PRODWS', match: { workspaces: ['/srv/prod/**'] } },
  { name: 'docs', channel: 'C0DOCS', match: { workspaces: ['/srv/docs/**', '/srv/docs'] } },
];

/** A handler over recorders: the records it creates, what it routed on and risk-checked on. */
function harness(maxSessionsPerHost?: number) {
  const created: ApprovalRecord[] = [];
  const routed: RouteInput[] = [];
  const riskInputs: RiskInput[] = [];
  const work: Promise<unknown>[] = [];
  const keeper = {
    enqueue: (_id: string, task: () => Promise<unknown>) => void work.push(task()),
    track: (task: Promise<unknown>) => void work.push(task),
    store: async (record: ApprovalRecord) => {
      created.push(record);
      return { posted: Promise.resolve() };
    },
    mutate: async () => undefined,
    idle: async () => {
      while (work.length > 0) await Promise.all(work.splice(0));
    },
  } as unknown as RecordKeeper;
  const store = { knows: () => false, saveFullText: async () => {} } as unknown as ApprovalStore;
  const router = new Router(ROUTES, 'C0FALLBACK');
  const relay = new HostEventHandler({
    keeper,
    store,
    decider: {} as Decider,
    host: () => undefined,
    logger: pino({ level: 'silent' }),
    routeFor: (input) => {
      routed.push(input);
      return router.routeFor(input);
    },
    sandboxModeOf: () => 'default',
    risksFor: (input) => {
      riskInputs.push(input);
      return [];
    },
    ...(maxSessionsPerHost === undefined ? {} : { maxSessionsPerHost }),
  });
  return { relay, created, routed, riskInputs };
}

function seen(
  hostId: string,
  sessionId: string,
  said: { label?: string; title?: string; workspaceRoot?: string },
): HostEvent {
  return { type: 'sessionSeen', hostId, incarnation: `inc-${hostId}`, sessionId, ...said };
}

/** A shell request whose subject names no directory: the session's workspace is the one used. */
function opened(hostId: string, sessionId: string, approvalId: string): HostEvent {
  const params = ApprovalRequestParams.parse(
    shellApproval({ approvalId, sessionId: 's', stages: [['make', 'docs']] }),
  );
  const { workspaceRoot: _own, ...subject } = params.subject as { workspaceRoot?: string };
  return {
    type: 'approvalOpened',
    hostId,
    incarnation: `inc-${hostId}`,
    via: 'request',
    // The sessionId set after parsing: a frame with one past the ids' bound is refused before
    // the relay, but the relay's own memory of sessions (knownSessions.ts) is bounded apart.
    params: { ...params, sessionId, subject: subject as ApprovalRequestParams['subject'] },
  };
}

async function openOne(h: ReturnType<typeof harness>, hostId: string, sessionId: string, approvalId: string) {
  h.relay.handleHostEvent(opened(hostId, sessionId, approvalId));
  await h.relay.idle();
  const record = h.created.find((r) => r.approvalId === approvalId);
  if (!record) throw new Error(`${approvalId} was not created`);
  return { record, routedOn: h.routed.at(-1)!, riskCheckedOn: h.riskInputs.at(-1)! };
}

describe("sessions are per host: one host cannot relabel or reroute another host's session", () => {
  it("B's approval gets B's title, label and workspace, though A announced B's sessionId after B", async () => {
    const h = harness();
    h.relay.handleHostEvent(
      seen('b', 's1', { label: 'docs cleanup', title: 'docs cleanup', workspaceRoot: '/srv/docs' }),
    );
    h.relay.handleHostEvent(
      seen('a', 's1', { label: 'prod deploy', title: 'prod deploy', workspaceRoot: '/srv/prod/app' }),
    );

    const b = await openOne(h, 'b', 's1', 'ap-b1');
    expect(b.routedOn).toMatchObject({
      hostId: 'b',
      sessionTitle: 'docs cleanup',
      workspaceRoot: '/srv/docs',
    });
    expect(b.riskCheckedOn.workspaceRoot).toBe('/srv/docs');
    expect(b.record).toMatchObject({ route: 'docs', sessionTitle: 'docs cleanup' });
    expect(b.record.slack.channel).toBe('C0DOCS');

    // A's own approval in its own session s1 still gets what A said.
    const a = await openOne(h, 'a', 's1', 'ap-a1');
    expect(a.record).toMatchObject({ route: 'prod-sessions', sessionTitle: 'prod deploy' });
    expect(a.riskCheckedOn.workspaceRoot).toBe('/srv/prod/app');
  });

  it('a session only another host announced is unknown to this one', async () => {
    const h = harness();
    h.relay.handleHostEvent(
      seen('a', 's2', { label: 'prod deploy', title: 'prod deploy', workspaceRoot: '/srv/prod/app' }),
    );
    const b = await openOne(h, 'b', 's2', 'ap-b2');
    expect(b.routedOn.sessionTitle).toBeUndefined();
    expect(b.routedOn.workspaceRoot).toBeUndefined();
    expect(b.record.sessionTitle).toBeUndefined();
    expect(b.record.route).toBe('(SLACK_CHANNEL)');
  });
});

describe('what is kept of sessions is bounded', () => {
  it('cuts a huge title and label, and the card is told it was cut', async () => {
    const h = harness();
    const huge = `prod ${'x'.repeat(4 * 1024 * 1024)}`;
    h.relay.handleHostEvent(seen('a', 's1', { label: huge, title: huge, workspaceRoot: '/srv/prod/app' }));
    const { record, routedOn } = await openOne(h, 'a', 's1', 'ap-1');
    expect(routedOn.sessionTitle!.length).toBeLessThanOrEqual(1024);
    expect(record.route).toBe('prod-sessions');
    expect(record.sessionTitle!.length).toBeLessThanOrEqual(1024);
    expect(record.sessionTitle).toMatch(/cut by Countersign: 4194309 characters in all\]$/);
    expect(record.intake?.parts.sessionTitle).toEqual({ maskedSecrets: 0, truncated: true });
    expect(record.intake?.truncated).toBe(true);
  });

  it('still masks a secret in the label and counts it on the record', async () => {
    const h = harness();
    h.relay.handleHostEvent(seen('a', 's1', { label: `Rotate ${AWS_EXAMPLE_KEY}` }));
    const { record } = await openOne(h, 'a', 's1', 'ap-1');
    expect(record.sessionTitle).toBe('Rotate [masked aws-access-key]');
    expect(record.intake?.parts.sessionTitle).toEqual({ maskedSecrets: 1, truncated: false });
    expect(record.intake?.maskedSecrets).toBe(1);
  });

  it('keeps no workspaceRoot longer than a path can be, and no session of a huge id', async () => {
    const h = harness();
    h.relay.handleHostEvent(
      seen('a', 's1', { title: 'prod', workspaceRoot: `/srv/docs/${'d'.repeat(5000)}` }),
    );
    const one = await openOne(h, 'a', 's1', 'ap-1');
    expect(one.routedOn.workspaceRoot).toBeUndefined();
    expect(one.routedOn.sessionTitle).toBe('prod');

    const longId = 's'.repeat(300);
    h.relay.handleHostEvent(seen('a', longId, { label: 'prod', title: 'prod' }));
    const two = await openOne(h, 'a', longId, 'ap-2');
    expect(two.routedOn.sessionTitle).toBeUndefined();
  });

  it('forgets the sessions announced longest ago, per host', async () => {
    const h = harness(3);
    const said = (n: number) => ({ label: `prod ${n}`, title: `prod ${n}` });
    for (const n of [0, 1, 2]) h.relay.handleHostEvent(seen('a', `s${n}`, said(n)));
    h.relay.handleHostEvent(seen('b', 'b0', said(0)));
    // s0 announced again is the newest: s1 is now the oldest.
    h.relay.handleHostEvent(seen('a', 's0', said(0)));
    h.relay.handleHostEvent(seen('a', 's3', said(3)));

    expect((await openOne(h, 'a', 's1', 'ap-1')).record.sessionTitle).toBeUndefined();
    for (const n of [0, 2, 3]) {
      expect((await openOne(h, 'a', `s${n}`, `ap-a${n}`)).record.sessionTitle).toBe(`prod ${n}`);
    }
    // Another host's sessions count against its own cap, never this one's.
    expect((await openOne(h, 'b', 'b0', 'ap-b0')).record.sessionTitle).toBe('prod 0');
  });

  it('keeps a session for its announcements only, not for the approvals that read it', async () => {
    const h = harness(2);
    const said = (n: number) => ({ label: `prod ${n}`, title: `prod ${n}` });
    for (const n of [0, 1]) h.relay.handleHostEvent(seen('a', `s${n}`, said(n)));
    // An approval in s0 reads what was announced of it: s0 is still the one announced longest ago.
    expect((await openOne(h, 'a', 's0', 'ap-0')).record.sessionTitle).toBe('prod 0');
    h.relay.handleHostEvent(seen('a', 's2', said(2)));

    expect((await openOne(h, 'a', 's0', 'ap-1')).record.sessionTitle).toBeUndefined();
    expect((await openOne(h, 'a', 's1', 'ap-2')).record.sessionTitle).toBe('prod 1');
  });
});
