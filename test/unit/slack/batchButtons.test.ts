// The batch summary's buttons as Slack delivers them, the decider and Slack replaced by recorders:
// what a press is decided in and whose summary it redraws come from Slack and the server, never
// from what the presser's client sent back.

import pino from 'pino';
import { describe, expect, it } from 'vitest';
import {
  BATCH_APPROVE_ACTION_ID,
  BATCH_REJECT_ACTION_ID,
  BATCH_REJECT_VIEW_CALLBACK_ID,
  FEEDBACK_BLOCK_ID,
} from '../../../src/cards/ids.js';
import {
  BATCH_GROUP_ID_TOO_LONG_TEXT,
  BATCH_TOO_MANY_MEMBERS_TEXT,
  REJECT_FORM_GONE_TEXT,
  renderRejectFormGoneModal,
} from '../../../src/cards/renderBatchSummary.js';
import {
  BATCH_GROUP_ID_MAX_CHARS,
  BATCH_MAX_MEMBERS,
  type BatchOutcome,
} from '../../../src/domain/batchGroup.js';
import type { BatchRequest } from '../../../src/relay/deciding/batchDecider.js';
import { type BatchButtonsOptions, registerBatchButtons } from '../../../src/slack/listeners/batchButtons.js';

type Handler = (args: Record<string, unknown>) => Promise<void>;

/** `checks`: what the decider's check answers (every member ready, unless told otherwise). */
function wired(checks: Record<string, unknown> = { ready: [{}], skipped: [] }) {
  const actions: Record<string, Handler> = {};
  const views: Record<string, Handler> = {};
  const app = {
    action: (id: string, h: Handler) => {
      actions[id] = h;
    },
    view: (id: string, h: Handler) => {
      views[id] = h;
    },
  };
  const decided: BatchRequest[] = [];
  const checked: BatchRequest[] = [];
  const noted: string[] = [];
  const told: Array<{ channel: string; text: string }> = [];
  const opened: unknown[] = [];
  const outcome = (r: BatchRequest): BatchOutcome => ({
    userId: r.userId,
    action: r.action,
    at: '2026-11-30T12:00:00Z',
    decided: r.members.map((m) => ({ approvalId: m.approvalId, session: 'Bump the version' })),
    skipped: [],
  });
  const options = {
    decider: {
      check: async (r: BatchRequest) => {
        checked.push(r);
        return { takesReason: 0, reasonRequired: false, quickReasons: [], ...checks };
      },
      decide: async (r: BatchRequest) => {
        decided.push(r);
        return outcome(r);
      },
      decideChecked: async (r: BatchRequest) => {
        decided.push(r);
        return outcome(r);
      },
    },
    triage: { noted: async (groupId: string) => void noted.push(groupId) },
    forms: { opened: async () => 'f1', take: async () => undefined, kept: async () => {} },
    views: { open: async (_trigger: string, view: unknown) => void opened.push(view) },
    web: {
      chat: {
        postEphemeral: async (a: { channel: string; text: string }) => void told.push(a),
      },
    },
    logger: pino({ level: 'silent' }),
  } as unknown as BatchButtonsOptions;
  registerBatchButtons(app as never, options);
  return { actions, views, decided, checked, noted, told, opened };
}

describe('batch buttons', () => {
  it('"Approve all once" redraws only a summary of the channel it was pressed in', async () => {
    const { actions, decided, noted } = wired();
    const press = (g: string) =>
      actions[BATCH_APPROVE_ACTION_ID]!({
        ack: async () => {},
        body: {
          user: { id: 'U0EVE' },
          channel: { id: 'C0PUBLIC' },
          actions: [{ action_id: BATCH_APPROVE_ACTION_ID, value: JSON.stringify({ g, m: [['a-1', 0]] }) }],
        },
      });
    await press('C0OTHER:abcdef');
    await press('C0PUBLIC:abcdef');
    expect(decided.map((r) => r.channel)).toEqual(['C0PUBLIC', 'C0PUBLIC']);
    expect(noted).toEqual(['C0PUBLIC:abcdef']);
  });

  it('"Reject all" whose form the server does not hold decides and tells nothing, and asks to press again', async () => {
    const { views, decided, noted, told } = wired();
    const acks: unknown[] = [];
    const metadata = JSON.stringify({ c: 'C0PRIVATE', g: 'C0OTHER:abcdef', m: [['a-private', 0]] });
    await views[BATCH_REJECT_VIEW_CALLBACK_ID]!({
      ack: async (response?: unknown) => void acks.push(response),
      body: { user: { id: 'U0EVE' } },
      view: { private_metadata: metadata, state: { values: {} }, blocks: [] },
    });
    expect(decided).toEqual([]);
    expect(noted).toEqual([]);
    expect(told).toEqual([]);
    expect(JSON.stringify(acks)).toContain(REJECT_FORM_GONE_TEXT);
  });

  it('a press listing more members than a summary carries is refused, said to its presser, and checks none', async () => {
    const { actions, decided, checked, noted, told } = wired();
    const m = Array.from({ length: BATCH_MAX_MEMBERS + 1 }, (_, i) => [`a-${i}`, 0]);
    for (const actionId of [BATCH_APPROVE_ACTION_ID, BATCH_REJECT_ACTION_ID]) {
      await actions[actionId]!({
        ack: async () => {},
        body: {
          user: { id: 'U0EVE' },
          trigger_id: 't-1',
          channel: { id: 'C0PUBLIC' },
          actions: [{ action_id: actionId, value: JSON.stringify({ g: 'C0PUBLIC:abcdef', m }) }],
        },
      });
    }
    expect(decided).toEqual([]);
    expect(checked).toEqual([]);
    expect(noted).toEqual([]);
    expect(told.map((t) => [t.channel, t.text])).toEqual([
      ['C0PUBLIC', BATCH_TOO_MANY_MEMBERS_TEXT],
      ['C0PUBLIC', BATCH_TOO_MANY_MEMBERS_TEXT],
    ]);
  });

  it('a press naming a group id longer than Countersign makes is refused, said to its presser, and checks none', async () => {
    const { actions, decided, checked, noted, told } = wired();
    const g = 'C0PUBLIC:'.padEnd(BATCH_GROUP_ID_MAX_CHARS + 1, 'a');
    for (const actionId of [BATCH_APPROVE_ACTION_ID, BATCH_REJECT_ACTION_ID]) {
      await actions[actionId]!({
        ack: async () => {},
        body: {
          user: { id: 'U0EVE' },
          trigger_id: 't-1',
          channel: { id: 'C0PUBLIC' },
          actions: [{ action_id: actionId, value: JSON.stringify({ g, m: [['a-1', 0]] }) }],
        },
      });
    }
    expect(decided).toEqual([]);
    expect(checked).toEqual([]);
    expect(noted).toEqual([]);
    expect(told.map((t) => [t.channel, t.text])).toEqual([
      ['C0PUBLIC', BATCH_GROUP_ID_TOO_LONG_TEXT],
      ['C0PUBLIC', BATCH_GROUP_ID_TOO_LONG_TEXT],
    ]);
  });

  it('"Reject all" metadata listing more members than a summary carries checks none of them', async () => {
    const { views, decided, checked, told } = wired();
    const m = Array.from({ length: BATCH_MAX_MEMBERS + 1 }, (_, i) => [`a-${i}`, 0]);
    await views[BATCH_REJECT_VIEW_CALLBACK_ID]!({
      ack: async () => {},
      body: { user: { id: 'U0EVE' } },
      view: {
        private_metadata: JSON.stringify({ c: 'C0PUBLIC', g: 'C0PUBLIC:abcdef', m }),
        state: { values: {} },
        blocks: [],
      },
    });
    expect(checked).toEqual([]);
    expect(decided).toEqual([]);
    expect(told).toEqual([]);
  });

  it('"Reject all" on a batch the decider refuses whole opens no form and tells its presser why', async () => {
    const { actions, told, opened } = wired({ ready: [], skipped: [], refused: 'tooManyMembers' });
    await actions[BATCH_REJECT_ACTION_ID]!({
      ack: async () => {},
      body: {
        user: { id: 'U0ALICE' },
        trigger_id: 't-1',
        channel: { id: 'C0PUBLIC' },
        actions: [
          {
            action_id: BATCH_REJECT_ACTION_ID,
            value: JSON.stringify({ g: 'C0PUBLIC:abcdef', m: [['a-1', 0]] }),
          },
        ],
      },
    });
    expect(opened).toEqual([]);
    expect(told.map((t) => [t.channel, t.text])).toEqual([['C0PUBLIC', BATCH_TOO_MANY_MEMBERS_TEXT]]);
  });

  it('"Reject all" whose metadata is unusable says in the form that it is no longer open, and checks nothing', async () => {
    const { views, decided, checked, told } = wired();
    const many = Array.from({ length: BATCH_MAX_MEMBERS + 1 }, (_, i) => [`a-${i}`, 0]);
    const unusable = [
      '{',
      JSON.stringify({ c: 'C0PUBLIC', g: 'C0PUBLIC:abcdef', m: many, f: 'f1' }),
      JSON.stringify({
        c: 'C0PUBLIC',
        g: 'C0PUBLIC:'.padEnd(BATCH_GROUP_ID_MAX_CHARS + 1, 'a'),
        m: [],
        f: 'f1',
      }),
    ];
    const reasonBlock = [{ type: 'input', block_id: FEEDBACK_BLOCK_ID }];
    for (const private_metadata of unusable) {
      // A form with a reason input carries the words under it; one without is replaced by them.
      for (const blocks of [reasonBlock, []]) {
        const acks: unknown[] = [];
        await views[BATCH_REJECT_VIEW_CALLBACK_ID]!({
          ack: async (response?: unknown) => void acks.push(response),
          body: { user: { id: 'U0EVE' } },
          view: { private_metadata, state: { values: {} }, blocks },
        });
        expect(acks).toEqual([
          blocks.length > 0
            ? { response_action: 'errors', errors: { [FEEDBACK_BLOCK_ID]: REJECT_FORM_GONE_TEXT } }
            : { response_action: 'update', view: renderRejectFormGoneModal() },
        ]);
      }
    }
    expect(checked).toEqual([]);
    expect(decided).toEqual([]);
    expect(told).toEqual([]);
  });

  it('a member listed twice is checked and decided once', async () => {
    const { actions, decided } = wired();
    const m = [
      ['a-1', 0],
      ['a-1', 0],
      ['a-2', 0],
    ];
    await actions[BATCH_APPROVE_ACTION_ID]!({
      ack: async () => {},
      body: {
        user: { id: 'U0ALICE' },
        channel: { id: 'C0PUBLIC' },
        actions: [{ action_id: BATCH_APPROVE_ACTION_ID, value: JSON.stringify({ g: 'C0PUBLIC:abcdef', m }) }],
      },
    });
    expect(decided.map((r) => r.members.map((x) => x.approvalId))).toEqual([['a-1', 'a-2']]);
  });
});
