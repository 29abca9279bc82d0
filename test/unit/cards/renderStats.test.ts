import { describe, expect, it } from 'vitest';
import { checkMessageLimits, checkViewLimits } from '../../../src/cards/limits.js';
import { renderHome } from '../../../src/cards/renderHome.js';
import { slaLine } from '../../../src/cards/renderSla.js';
import {
  MAX_STATS_ROWS,
  renderHomeStats,
  renderStats,
  type StatsView,
} from '../../../src/cards/renderStats.js';
import { type DecisionFact, summarize } from '../../../src/domain/decisionStats.js';
import { cardFacts } from '../../../src/domain/messages.js';
import { cardMetadata } from '../../../src/slack/cardMetadata.js';

function viewOf(routes: number, tool = 'bash'): StatsView {
  const facts: DecisionFact[] = [];
  for (let i = 0; i < routes; i++) {
    facts.push({
      route: `route-${String(i).padStart(3, '0')}`,
      tool,
      by: 'person',
      waitedMs: 1_500,
      steps: 0,
      slaTracked: false,
      slaBreached: false,
      command: '<!channel> *x*',
    });
  }
  return { window: '7d', routes: summarize(facts), capped: false, read: facts.length };
}

describe('renderStats', () => {
  it('one table within Slack limits however many routes; agent text escaped', () => {
    const answer = renderStats(viewOf(250, '<!here>`bad`'));
    expect(checkMessageLimits(answer)).toEqual([]);
    const tables = (answer.blocks as Array<{ type: string; rows?: unknown[] }>).filter(
      (b) => b.type === 'table',
    );
    expect(tables).toHaveLength(1);
    expect(tables[0]!.rows).toHaveLength(MAX_STATS_ROWS + 1);
    const text = JSON.stringify(answer.blocks);
    expect(text).not.toContain('<!here>');
    expect(text).not.toContain('<!channel>');
    expect(text).toContain('151 more routes left out');
  });

  it('a table in a Home view breaks Slack limits; the Home section uses sections', () => {
    expect(checkViewLimits({ type: 'home', blocks: renderStats(viewOf(2)).blocks })).toContain(
      'blocks: table blocks are for messages only',
    );
    const home = renderHome({
      waiting: [],
      recent: [],
      channel: 'C1',
      status: { host: true, redis: true },
      now: new Date(),
      stats: viewOf(40),
    });
    expect(checkViewLimits(home)).toEqual([]);
    expect(JSON.stringify(home)).toContain('…and 35 more routes');
  });
});

describe('renderHomeStats', () => {
  it('escapes a route’s name once', () => {
    const facts: DecisionFact[] = [
      {
        route: 'a&b <!here>',
        tool: 'bash',
        by: 'person',
        waitedMs: 1,
        steps: 0,
        slaTracked: false,
        slaBreached: false,
      },
    ];
    const blocks = renderHomeStats({ window: '7d', routes: summarize(facts), capped: false, read: 1 });
    const text = JSON.stringify(blocks);
    expect(text).toContain('*a&amp;b &lt;!here&gt;*: 1 decided');
    expect(text).not.toContain('&amp;amp;');
  });
});

describe('card metadata', () => {
  it('says the approval, route, state, decision and when it changed; nothing else', () => {
    const record = {
      approvalId: 'a-1',
      route: 'deploys',
      phase: 'resolved' as const,
      resolution: {
        decision: 'approved',
        resolvedBy: 'user',
        decidedAt: 'x',
        slackUserId: 'U1',
        via: 'click' as const,
      },
      updatedAt: '2026-01-01T00:00:00.000Z',
    };
    expect(cardMetadata('a-1', cardFacts(record))).toEqual({
      event_type: 'countersign_card',
      event_payload: {
        approval_id: 'a-1',
        v: 1,
        route: 'deploys',
        state: 'resolved',
        decision: 'approved',
        decided_via: 'click',
        changed_at: '2026-01-01T00:00:00.000Z',
      },
    });
    expect(
      cardMetadata('a-1', cardFacts({ ...record, phase: 'pending', resolution: undefined })).event_payload,
    ).toEqual({
      approval_id: 'a-1',
      v: 1,
      route: 'deploys',
      state: 'pending',
      changed_at: '2026-01-01T00:00:00.000Z',
    });
  });
});

describe('slaLine', () => {
  const openedAt = '2026-01-01T00:00:00.000Z';
  const at = (s: number) => new Date(Date.parse(openedAt) + s * 1000);
  it('while open: when it is due, then that it is past due; none without an sla', () => {
    const record = { phase: 'pending' as const, openedAt };
    expect(slaLine(record, 60_000, at(15), true)).toBe(
      ':hourglass_flowing_sand: *SLA* 1 min: due <!date^1767225660^{ago} ({time})|in 1 min>.',
    );
    expect(slaLine(record, 60_000, at(61), true)).toBe(
      ':hourglass: *Past its SLA* of 1 min: it was due <!date^1767225660^{ago} ({time})|already>.',
    );
    expect(slaLine(record, undefined, at(61), true)).toBeUndefined();
  });

  it('once decided: within or past it, counted from the first card of the request', () => {
    const resolution = { decision: 'approved', resolvedBy: 'user', decidedAt: at(90).toISOString() };
    const resolved = { phase: 'resolved' as const, openedAt, resolution };
    expect(slaLine(resolved, 60_000, at(100), false)).toBe(
      ':hourglass: Decided after 2 min, *past its SLA* of 1 min.',
    );
    expect(slaLine(resolved, 120_000, at(100), false)).toBe(
      ':hourglass: Decided after 2 min, within its SLA of 2 min.',
    );
    expect(slaLine({ ...resolved, phase: 'superseded' as const }, 60_000, at(100), false)).toBeUndefined();
  });
});
