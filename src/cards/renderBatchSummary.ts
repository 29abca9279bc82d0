import type { ActionsBlock, KnownBlock, ModalView } from '@slack/types';
import { z } from 'zod';
import {
  BATCH_GROUP_ID_MAX_CHARS,
  BATCH_MAX_MEMBERS,
  type BatchMember,
  type BatchOutcome,
  type BatchRefusal,
  type BatchSkip,
  firstOfEach,
  publicOutcome,
  type SummaryView,
  skippedForThePresser,
} from '../domain/batchGroup.js';
import { context, header, packSections, plainText, section } from './blocks.js';
import { clip, inlineCode } from './escape.js';
import {
  BATCH_APPROVE_ACTION_ID,
  BATCH_REJECT_ACTION_ID,
  BATCH_REJECT_VIEW_CALLBACK_ID,
  BATCH_REVIEW_ACTION_ID,
} from './ids.js';
import { MAX_BUTTON_VALUE } from './limits.js';
import { mentionUser } from './mentionUser.js';
import { clipProse } from './prose.js';
import { quickReasonsBlock, reasonInput } from './renderFeedbackModal.js';
import { refusalText } from './renderUserMessages.js';

// The batch triage summary card (docs/slack.md#batch-triage), its "Reject all" modal, and the
// answer its clicker reads. Every piece of agent text (commands, session titles) is escaped.

/**
 * What a summary's buttons carry: the group and the members (and their stage) as drawn. A summary
 * carries at most BATCH_MAX_MEMBERS (`carried`): the presser may write the value, and each member
 * costs a read, a check and perhaps Slack look-ups, so a value listing more is no summary's and is
 * refused whole. A member listed again is dropped, the first kept: it would be checked twice. A
 * group id longer than Countersign makes is no summary's either: it would become a Redis key part.
 */
export const BatchButtonValue = z.object({
  g: z.string().max(BATCH_GROUP_ID_MAX_CHARS),
  m: z
    .array(z.tuple([z.string(), z.number().int()]))
    .max(BATCH_MAX_MEMBERS)
    .transform((members) => firstOfEach(members, ([approvalId]) => approvalId)),
});
export type BatchButtonValue = z.infer<typeof BatchButtonValue>;

/** A pressed value: what it carries, or why it is refused (BatchRefusal: no summary drew it). */
export type ReadBatchValue = { value: BatchButtonValue } | { refused: 'unusable' | BatchRefusal };

export function readBatchValue(raw: string | undefined): ReadBatchValue {
  let json: unknown;
  try {
    json = JSON.parse(raw ?? '');
  } catch {
    return { refused: 'unusable' };
  }
  const parsed = BatchButtonValue.safeParse(json);
  if (parsed.success) return { value: parsed.data };
  const tooBig = (field: string) =>
    parsed.error.issues.some((i) => i.code === 'too_big' && i.path[0] === field);
  return { refused: tooBig('m') ? 'tooManyMembers' : tooBig('g') ? 'groupIdTooLong' : 'unusable' };
}

export function decodeBatchValue(raw: string | undefined): BatchButtonValue | undefined {
  const read = readBatchValue(raw);
  return 'value' in read ? read.value : undefined;
}

/** A press whose value lists more members than a summary carries: not a button Countersign drew. */
export const BATCH_TOO_MANY_MEMBERS_TEXT = `Nothing was decided: this button lists more than the ${BATCH_MAX_MEMBERS} requests a summary carries, so it is not one Countersign drew. Press a button on the summary itself.`;

/** A press whose value names a group id longer than Countersign makes: not a button Countersign drew. */
export const BATCH_GROUP_ID_TOO_LONG_TEXT = `Nothing was decided: this button names a batch by an id longer than the ${BATCH_GROUP_ID_MAX_CHARS} characters Countersign gives one, so it is not one Countersign drew. Press a button on the summary itself.`;

/** What the presser of a batch refused whole reads (BatchRefusal): why no summary drew it. */
export function batchRefusalText(refused: BatchRefusal): string {
  switch (refused) {
    case 'tooManyMembers':
      return BATCH_TOO_MANY_MEMBERS_TEXT;
    case 'groupIdTooLong':
      return BATCH_GROUP_ID_TOO_LONG_TEXT;
  }
}

/** `links`: approvalId → the card's permalink, where Slack gave one. */
export function renderBatchSummary(
  view: SummaryView,
  links: ReadonlyMap<string, string>,
): { text: string; blocks: KnownBlock[] } {
  const { shared } = view;
  const what = shared.capabilities.map((c) => inlineCode(c, 300)).join(', ');
  const facts = [
    `*Asks:* ${what}`,
    `*Tool:* ${clipProse(shared.tool, 100)} · *Sandbox:* ${clipProse(shared.sandboxMode, 60)}${shared.route ? ` · *Route:* ${clip(shared.route, 100)}` : ''}`,
  ].join('\n');
  const last = view.last ? [context([outcomeLine(view.last)])] : [];
  if (view.closed) {
    return {
      text: 'Batch closed: no alike request waits any more',
      blocks: [
        header('Batch closed'),
        section(facts),
        context(['No alike request waits any more.']),
        ...last,
      ],
    };
  }
  // No more than the buttons' value may carry (BatchButtonValue); the others are said to wait.
  const drawn = view.members.slice(0, BATCH_MAX_MEMBERS);
  const { listed, encoded } = carried(view.groupId, drawn);
  // Not one fits (ids of thousands of characters): the cards are linked, to be decided there.
  const shown = listed.length > 0 ? listed : drawn;
  const sessions = new Map<string, number>();
  for (const m of shown) sessions.set(m.session, (sessions.get(m.session) ?? 0) + 1);
  const sessionLine = [...sessions]
    .map(([name, n]) => `${clipProse(name, 80)}${n > 1 ? ` ×${n}` : ''}`)
    .join(', ');
  const cards = shown.map((m, i) => {
    // The session names the card; the link opens it (no approval id: it is on the card).
    const label = `${i + 1}. ${clipProse(m.session, 60)}`;
    const link = links.get(m.approvalId);
    return link ? `<${link}|${label}>` : label;
  });
  const more = view.total > listed.length ? view.total - listed.length : 0;
  const leftOff = drawn.length - listed.length;
  const n = listed.length;
  const notes = [
    ...(listed.length === 0
      ? ['Their approval ids are too long for one button to carry: decide each on its own card.']
      : more > 0
        ? [`${more} more wait beyond these; they join this summary as these are decided.`]
        : []),
    ...(listed.length > 0 && leftOff > 0
      ? [
          `${leftOff} of them ${leftOff === 1 ? 'is' : 'are'} left off only because the buttons cannot carry more long approval ids.`,
        ]
      : []),
  ];
  const actions: ActionsBlock = {
    type: 'actions',
    block_id: 'cs_batch_actions',
    elements: [
      {
        type: 'button',
        action_id: BATCH_APPROVE_ACTION_ID,
        style: 'primary',
        text: plainText(`Approve all ${n} once`),
        value: encoded,
        confirm: {
          title: plainText('Approve all once?'),
          text: plainText(
            `Each of the ${n} requests listed is approved once, as if you pressed its own card. Nothing is remembered.`,
          ),
          confirm: plainText('Approve all'),
          deny: plainText('Cancel'),
        },
      },
      {
        type: 'button',
        action_id: BATCH_REJECT_ACTION_ID,
        style: 'danger',
        text: plainText('Reject all'),
        value: encoded,
      },
      {
        type: 'button',
        action_id: BATCH_REVIEW_ACTION_ID,
        text: plainText('Review one by one'),
        value: encoded,
      },
    ],
  };
  return {
    text: `${view.total} alike requests are waiting`,
    blocks: [
      header(`${view.total} alike requests waiting`),
      section(facts),
      section(`*From:* ${sessionLine}`),
      ...packSections(cards),
      ...(notes.length > 0 ? [context(notes)] : []),
      ...(listed.length > 0 ? [actions] : []),
      ...last,
    ],
  };
}

/**
 * The members the buttons carry, and their value: the drawn ones, oldest first, as many as fit in
 * Slack's 2,000 characters of a button value (20 of approval ids over about 90 characters do
 * not). Those left off are neither listed nor decided by this drawing: they wait on their cards as
 * those beyond the first 20 do. Carrying each member's id and stage keeps what a press decides to
 * what the summary showed: each is re-checked against Redis, and one that changed since is
 * skipped and named (a press that read the group from Redis instead would decide members its
 * presser never saw, at stages never shown).
 */
function carried(
  groupId: string,
  members: readonly BatchMember[],
): { listed: BatchMember[]; encoded: string } {
  const value: BatchButtonValue = { g: groupId, m: [] };
  // Counted as it grows, not encoded again per member: `,` between entries.
  let length = JSON.stringify(value).length;
  const listed: BatchMember[] = [];
  for (const member of members) {
    const entry: [string, number] = [member.approvalId, member.sourceIndex];
    const adds = JSON.stringify(entry).length + (value.m.length > 0 ? 1 : 0);
    // A longer one may not fit where a later, shorter one does: it waits on its card.
    if (length + adds > MAX_BUTTON_VALUE) continue;
    length += adds;
    value.m.push(entry);
    listed.push(member);
  }
  return { listed, encoded: JSON.stringify(value) };
}

/**
 * One line of what the last batch did, on the summary itself: never whom its presser could not
 * decide for (publicOutcome), also for a note kept before that was left out of what is kept.
 */
function outcomeLine(outcome: BatchOutcome): string {
  const verb = outcome.action === 'approve' ? 'approved once' : 'rejected';
  const { skipped } = publicOutcome(outcome);
  const named = skipped.length ? ` Skipped ${skipped.length}: ${skipped.map(skipName).join(', ')}.` : '';
  return `${mentionUser(outcome.userId)} ${verb} ${outcome.decided.length} together.${named}`;
}

function skipName(skip: BatchSkip): string {
  const why = skip.refusal.code === 'alreadyResolved' ? 'already decided' : 'changed';
  return `${clipProse(skip.session || skip.approvalId, 60)} · ${clipProse(skip.approvalId.slice(-8), 8)} (${why})`;
}

/** What the person who pressed "Approve all once" or "Reject all" reads, ephemeral. */
export function batchAnswerText(outcome: BatchOutcome): string {
  // Nothing was read: not "you may not decide these", which would be a guess about the presser.
  if (outcome.refused) return batchRefusalText(outcome.refused);
  const verb = outcome.action === 'approve' ? 'approved once' : 'rejected';
  if (outcome.decided.length === 0 && outcome.skipped.every((s) => s.refusal.code === 'notAuthorized')) {
    const first = outcome.skipped[0];
    const why = first ? refusalText(first.refusal) : '';
    return `Nothing was decided: you may not decide these requests. ${why}`.trim();
  }
  const head =
    outcome.decided.length === 0
      ? 'Nothing was decided.'
      : `You ${verb} ${outcome.decided.length} request${outcome.decided.length === 1 ? '' : 's'}, each as if pressed on its own card.`;
  const line = (s: BatchSkip) =>
    `• ${clipProse(s.session || s.approvalId, 80)} (${clipProse(s.approvalId, 60)}): ${refusalText(s.refusal)}`;
  const changed = outcome.skipped.filter((s) => !skippedForThePresser(s));
  const refused = outcome.skipped.filter(skippedForThePresser);
  let text = head;
  if (changed.length > 0) {
    text += ` Skipped ${changed.length}, which changed since the summary was drawn:\n${changed.map(line).join('\n')}`;
  }
  // Only the presser reads this: whom they may not decide for is theirs to know.
  if (refused.length > 0) {
    text += `\nLeft for someone else, ${refused.length} you may not decide:\n${refused.map(line).join('\n')}`;
  }
  return text;
}

/** "Review one by one": nothing is decided; the cards stay as they are. */
export const REVIEW_ONE_BY_ONE_TEXT =
  'Nothing was decided. The cards stay as they are: open each from the summary and decide it on its own card.';

/** "Reject all" could not check its members in time (Redis away): no form is opened. */
export const REJECT_CHECK_FAILED_TEXT =
  'Nothing was rejected: Countersign could not read these requests just now. Please press Reject all again.';

/** The same, at the form's submit: said in the form, which stays open to be sent again. */
export const REJECT_SUBMIT_CHECK_FAILED_TEXT =
  'Nothing was rejected: Countersign could not read these requests just now. Please send it again.';

/**
 * A "Reject all" submit whose form the server does not hold (expired, replayed, edited, forged):
 * nothing is decided from what Slack's client sent back, so the person presses again.
 */
export const REJECT_FORM_GONE_TEXT =
  'Nothing was rejected: this form is no longer open. Please press Reject all again.';

/** The same, shown in place of a form with no reason input to hang the error on. */
export function renderRejectFormGoneModal(): ModalView {
  return {
    type: 'modal',
    title: plainText('Reject all'),
    close: plainText('Close'),
    blocks: [section(REJECT_FORM_GONE_TEXT)],
  };
}

/** Slack did not open the "Reject all" form (a trigger past its 3 s, Slack away). */
export const REJECT_FORM_FAILED_TEXT =
  'Nothing was rejected: Slack did not open the form for the reason. Please press Reject all again.';

/** What the "Reject all" modal says and asks: from the check of its members when it opens. */
export interface BatchRejectForm {
  /** Members its presser may reject now. */
  decidable: number;
  /** Of those, how many take a reason (their reject choice accepts feedback). */
  takesReason: number;
  /** A route of one that takes a reason requires one (`rejectReason: required`). */
  reasonRequired: boolean;
  /** The routes' quick reasons, offered as a card's reject modal offers them. */
  quickReasons: readonly string[];
  /**
   * Where the server keeps what the form was opened on (which members' refusals were audited
   * then): the metadata carries only this, since Slack's client may change the metadata.
   */
  formId?: string;
}

/**
 * The "Reject all" modal: one reason, sent with each rejection whose choice takes one, asked as a
 * card's reject modal asks it (the route's quick reasons, a required reason enforced at submit).
 * What it says of the reason is true of the members it rejects: a choice that takes no reason is
 * sent without it.
 */
export function renderBatchRejectModal(
  value: BatchButtonValue,
  channel: string,
  form: BatchRejectForm,
): ModalView {
  const listed = value.m.length;
  const { decidable, takesReason } = form;
  const who =
    decidable >= listed
      ? `Each of the ${listed} requests is rejected as if pressed on its own card.`
      : `${decidable} of the ${listed} requests ${decidable === 1 ? 'is' : 'are'} yours to reject now, each as if pressed on its own card; the others are left as they are.`;
  const reason =
    takesReason === 0
      ? decidable === 1
        ? 'It takes no reason: the agent is told only that it was rejected.'
        : 'None of them takes a reason: each agent is told only that its request was rejected.'
      : takesReason >= decidable
        ? 'The agent sees the reason you give, on each.'
        : `The agent sees the reason you give on ${takesReason} of them; the other ${decidable - takesReason} take${decidable - takesReason === 1 ? 's' : ''} no reason and ${decidable - takesReason === 1 ? 'is' : 'are'} rejected without it.`;
  const asks =
    takesReason === 0
      ? []
      : [
          ...(form.quickReasons.length > 0 ? [quickReasonsBlock(form.quickReasons)] : []),
          reasonInput(form.reasonRequired, form.quickReasons.length > 0),
        ];
  return {
    type: 'modal',
    callback_id: BATCH_REJECT_VIEW_CALLBACK_ID,
    title: plainText('Reject all'),
    submit: plainText('Reject all'),
    close: plainText('Cancel'),
    private_metadata: JSON.stringify({
      c: channel,
      ...value,
      ...(form.formId ? { f: form.formId } : {}),
    }),
    blocks: [context([`${who} ${reason}`]), ...asks],
  };
}
