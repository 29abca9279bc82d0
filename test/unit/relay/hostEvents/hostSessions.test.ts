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

const ROUTES: Route[] = [
  { name: 'prod-sessions', channel: 'C0PRODTITLE', match: { sessionTitles: ['prod*'] } },
  { name: 'prod-workspaces', channel: 'C0PRODWS', match: { workspaces: ['/srv/prod/**'] } },
  { name: 'docs', channel: 'C0DOCS', match: { workspaces: ['/srv/docs/**', '/srv/docs'] } },
];

/** A handler over recorders: the records it creates, what it routed on and risk-checked on. */
function harness() {
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
    shellApproval({ approvalId, sessionId, stages: [['make', 'docs']] }),
  );
  const { workspaceRoot: _own, ...subject } = params.subject as { workspaceRoot?: string };
  return {
    type: 'approvalOpened',
    hostId,
    incarnation: `inc-${hostId}`,
    via: 'request',
    params: { ...params, subject: subject as ApprovalRequestParams['subject'] },
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
