import type { KnownBlock } from '@slack/types';
import type { EscalationReply } from '../domain/escalationNotice.js';
import type { RenderedMessage } from '../domain/messages.js';
import type { ApprovalRecord, Escalation, FiredStep } from '../domain/record.js';
import type { EscalationStep } from '../domain/route.js';
import { hiddenMarker } from '../util/hiddenCharacters.js';
import { shortDuration } from '../util/shortDuration.js';
import { packSections } from './blocks.js';
import { BUDGET_LEVELS } from './budget.js';
import { clip, inlineCode, truncate } from './escape.js';
import { clipProse } from './prose.js';
import { renderChoices } from './renderChoices.js';
import { subjectSummary, summarisesSubject, TAKEOVER } from './subjectSummary.js';

// The card's escalation line, a pure function of the record's escalation and the route's ladder:
// "Escalation: reminded at 10 min · paged @bob at 30 min · next: DM in 15 min".

const DONE: Record<FiredStep['action'], string> = {
  remind: 'reminded',
  mention: 'mentioned',
  dm: 'DMed',
  page: 'paged',
  timeout: 'timed out',
};

const NEXT: Record<EscalationStep['action'], string> = {
  remind: 'reminder',
  mention: 'mention',
  dm: 'DM',
  page: 'page',
  timeout: 'timeout',
};

/** A name (never a mention: a card must not ping) made safe for mrkdwn. */
function shownName(who: string): string {
  return clip(who, 60);
}

/**
 * The line, or undefined when there is no ladder. `open`: someone may still decide, so the next
 * step is named, counted from `now`.
 */
export function escalationLine(
  escalation: Escalation | undefined,
  ladder: readonly EscalationStep[],
  now: Date,
  open: boolean,
): string | undefined {
  if (ladder.length === 0 && !escalation?.fired.length) return undefined;
  const parts = (escalation?.fired ?? []).map((f) => {
    if (f.failed) return `${NEXT[f.action]} failed at ${shortDuration(f.afterMs)}`;
    const who = f.who ? ` ${shownName(f.who)}` : '';
    return `${DONE[f.action]}${who} at ${shortDuration(f.afterMs)}`;
  });
  if (open && escalation) {
    const fired = new Set(escalation.fired.map((f) => f.step));
    const nextIndex = ladder.findIndex((_, i) => !fired.has(i));
    const next = ladder[nextIndex];
    if (next) {
      const dueMs = Date.parse(escalation.startedAt) + next.afterMs - now.getTime();
      parts.push(`next: ${NEXT[next.action]} in ${shortDuration(Math.max(0, dueMs))}`);
    }
  } else if (open && ladder[0]) {
    parts.push(`next: ${NEXT[ladder[0].action]} at ${shortDuration(ladder[0].afterMs)}`);
  }
  if (parts.length === 0) return undefined;
  return `:rotating_light: Escalation: ${parts.join(' · ')}`;
}

/** What a timed-out card says plainly. */
export function timedOutLine(afterMs: number): string {
  return `:alarm_clock: *Timed out after ${shortDuration(afterMs)} — rejected.* Nobody answered in time.`;
}

/** What a reminder or a mention says in the card's thread. */
export function renderEscalationReply(reply: EscalationReply): string {
  const waited = shortDuration(reply.waitedMs);
  if (reply.kind === 'remind') return `:alarm_clock: This approval has waited ${waited} for a decision.`;
  const mention = reply.usergroup
    ? `<!subteam^${reply.usergroup}>`
    : reply.users.map((u) => `<@${u}>`).join(' ');
  return mention
    ? `:mega: ${mention}: this approval has waited ${waited} for a decision.`
    : `:mega: This approval has waited ${waited}, and nobody on call could be found to ask.`;
}

/** Safe link text for mrkdwn: `<url|text>` where neither may break out. */
function link(url: string, text: string): string {
  return `<${url.replace(/[<>|]/g, encodeURIComponent)}|${text}>`;
}

/**
 * The escalation DM: the card's summary, a link to it, and the card's own buttons (the same
 * action ids and values, so a press decides exactly as on the card, with the same checks).
 */
export function renderEscalationDm(
  record: ApprovalRecord,
  opts: { permalink?: string; waitedMs: number; inPlaceOf?: string },
): RenderedMessage {
  const budget = BUDGET_LEVELS[BUDGET_LEVELS.length - 1]!;
  const request = dmRequest(record);
  const summary = `${record.tool}${request ? ` — ${request.text}` : ''}`;
  const lines = [
    opts.inPlaceOf
      ? `:rotating_light: *An approval has waited ${shortDuration(opts.waitedMs)}* and you are asked in place of ${clip(opts.inPlaceOf, 80)}, who is away.`
      : `:rotating_light: *An approval has waited ${shortDuration(opts.waitedMs)}* and you are on call.`,
    `*Tool:* ${inlineCode(record.tool, 80)}${request ? `\n*Request:* ${request.shown}` : ''}`,
  ];
  if (record.sessionTitle) lines.push(`*Session:* ${clipProse(record.sessionTitle, 150)}`);
  if (opts.permalink) lines.push(link(opts.permalink, 'Open the card'));
  const blocks: KnownBlock[] = [...packSections(lines)];
  if (record.phase === 'pending') blocks.push(...renderChoices(record, budget, 10));
  // The notification text spans no lines either; a line break in it shows as on the card.
  const text = `Waiting for a decision: ${summary}`.replaceAll('\n', hiddenMarker('\n'));
  return { text: truncate(text, 300), blocks };
}

/**
 * What the DM names as the request, beside buttons that decide it: the command, path or target as
 * the card shows it (in inline code, line breaks and hidden characters as markers, never flattened
 * into one harmless-looking line). A takeover is said in the bot's words; a kind subjectSummary()
 * does not read is named, never the agent's title, and the approver sent to the card, which shows
 * the subject as sent.
 */
function dmRequest(record: ApprovalRecord): { text: string; shown: string } | undefined {
  if (record.subject.kind === 'computerUseTakeover') return { text: TAKEOVER, shown: TAKEOVER };
  if (!summarisesSubject(record)) {
    return {
      text: `a request of kind ${record.subject.kind}: open the card`,
      shown: `a request of kind ${inlineCode(record.subject.kind, 80)}, not a kind this bot knows: open the card to see it as sent`,
    };
  }
  const what = subjectSummary(record);
  return what ? { text: what, shown: inlineCode(what, 500) } : undefined;
}
