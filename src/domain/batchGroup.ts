import { createHash } from 'node:crypto';
import { alikeCapabilities } from './grants/capabilities.js';
import { onceChoice } from './grants/match.js';
import type { ApprovalRecord, CardPlace } from './record.js';
import type { Refusal } from './refusal.js';

// Batch triage (docs/slack.md#batch-triage): which pending approvals of one channel ask the same
// thing, so that one summary card may offer to decide them together. Pure.

/** What every member of a group shares: what the summary card says they ask. */
export interface BatchShared {
  route: string;
  tool: string;
  capabilities: string[];
  sandboxMode: string;
}

/** A group: its id (channel and a digest of what is shared) and what is shared. */
export interface BatchGroupOf {
  groupId: string;
  channel: string;
  /** Shared by every member's answer: not to be changed. */
  shared: Readonly<BatchShared>;
}

/** One member as the summary lists it: enough to link its card and name its session. */
export interface BatchMember {
  approvalId: string;
  /** The stage the member asked about when it joined: a batch decides only that stage. */
  sourceIndex: number;
  ts: string;
  session: string;
}

/**
 * The group an approval belongs to, or undefined when it must be decided on its own card: not
 * pending (or not posted yet), a quorum above 1, a risk rule matched, a protected write, a kind or
 * a command not fully understood (the same test a grant passes), no approve-once choice.
 */
export function batchGroupOf(
  record: ApprovalRecord,
  quorum: number,
  place: Partial<CardPlace> = record.slack,
): BatchGroupOf | undefined {
  if (record.phase !== 'pending' || record.slack.deferred || quorum > 1) return undefined;
  return batchShapeOf(record, place);
}

/**
 * The group whose question an approval's card asks, whether or not it may be in it now (pending,
 * its quorum): what it leaves when it may no longer be. Undefined when the question itself is
 * never decided together. `place`: where its card is, when the record does not say yet.
 */
export function batchShapeOf(
  record: ApprovalRecord,
  place: Partial<CardPlace> = record.slack,
): BatchGroupOf | undefined {
  const { channel, ts } = place;
  if (!channel || !ts || record.risks?.length || record.protectedWrite) return undefined;
  if (channel.length > MAX_GROUP_CHANNEL_CHARS) return undefined;
  if (!onceChoice(record.availableChoices)) return undefined;
  const { capabilities, notGrantable } = alikeCapabilities(record);
  if (notGrantable || capabilities.length === 0) return undefined;
  const shape = shapeOf(record.route ?? '', record.tool, capabilities, record.sandboxMode);
  let groupId = shape.groupIds.get(channel);
  if (groupId === undefined) {
    groupId = `${channel}:${shape.digest}`;
    if (shape.groupIds.size < MAX_CHANNELS_PER_SHAPE) shape.groupIds.set(channel, groupId);
  }
  return { groupId, channel, shared: shape.shared };
}

/** A question as groups share it: its digest, what it shares, and its group id in each channel. */
interface Shape {
  digest: string;
  shared: Readonly<BatchShared>;
  groupIds: Map<string, string>;
}

/**
 * Shapes already worked out: a burst's members ask the same, and share one, with its `shared`
 * object and group ids (no copies per card: docs/performance.md, "Batch triage").
 */
const shapes = new Map<string, Shape>();
const MAX_SHAPES = 1_000;
const MAX_CHANNELS_PER_SHAPE = 100;

function shapeOf(route: string, tool: string, capabilities: string[], sandboxMode: string): Shape {
  // JSON: no two questions read the same, whatever their words hold.
  const text = JSON.stringify([route, tool, capabilities, sandboxMode]);
  let shape = shapes.get(text);
  if (shape === undefined) {
    shape = {
      digest: createHash('sha256').update(text).digest('hex').slice(0, DIGEST_CHARS),
      shared: Object.freeze({ route, tool, capabilities: [...capabilities], sandboxMode }),
      groupIds: new Map(),
    };
    // Oldest out first: a Map iterates in insertion order.
    if (shapes.size >= MAX_SHAPES) shapes.delete(shapes.keys().next().value!);
    shapes.set(text, shape);
  }
  return shape;
}

/** A member as it joins: its card and its session's name. */
export function batchMemberOf(record: ApprovalRecord): BatchMember {
  return {
    approvalId: record.approvalId,
    sourceIndex: record.currentRequirementId.sourceIndex,
    ts: record.slack.ts ?? '',
    session: record.sessionTitle ?? record.sessionId,
  };
}

/**
 * The most members a summary lists and decides at once: a button's value holds them all (fewer
 * when their approval ids are long: renderBatchSummary lists those its buttons can carry). Also
 * the most a pressed value may list: one listing more was drawn by no summary, and is refused.
 */
export const BATCH_MAX_MEMBERS = 20;

/**
 * The members of a press, each approval once, the first listing kept: a value that lists one
 * twice (only a crafted one does) must not have it read, checked or decided twice.
 */
export function firstOfEach<T>(members: readonly T[], approvalIdOf: (member: T) => string): T[] {
  const seen = new Set<string>();
  return members.filter((member) => {
    const approvalId = approvalIdOf(member);
    if (seen.has(approvalId)) return false;
    seen.add(approvalId);
    return true;
  });
}

/**
 * Why a batch is refused whole, before any member is read: it lists more members than any summary
 * carries, or names a group by an id longer than Countersign makes, so no summary drew it. Told to
 * its presser, whichever layer found it.
 */
export type BatchRefusal = 'tooManyMembers' | 'groupIdTooLong';

/** How many hex characters of its question's sha256 a group id carries. */
const DIGEST_CHARS = 24;

/**
 * The longest channel id a group is made in. Slack's are about a dozen characters (C0123456789);
 * a card in a channel with a longer one is decided on its own card, so that no group id
 * Countersign makes is longer than BATCH_GROUP_ID_MAX_CHARS.
 */
const MAX_GROUP_CHANNEL_CHARS = 64;

/**
 * The longest group id (`<channel>:<digest>`) Countersign makes. A button's value or a form naming
 * a longer one was drawn by no summary: it is refused before the id is part of any Redis key.
 */
export const BATCH_GROUP_ID_MAX_CHARS = MAX_GROUP_CHANNEL_CHARS + 1 + DIGEST_CHARS;

/** One approval a batch decision left alone, and why (what its clicker would have been told). */
export interface BatchSkip {
  approvalId: string;
  session: string;
  refusal: Refusal;
}

/** What one press of "Approve all once" or "Reject all" did: told to its clicker, kept on the summary. */
export interface BatchOutcome {
  userId: string;
  action: 'approve' | 'reject';
  at: string;
  /** Approvals whose decision was sent (or handed to the replica that runs their host). */
  decided: Array<{ approvalId: string; session: string }>;
  skipped: BatchSkip[];
  /** Refused whole: nothing was read, checked or decided, and this says why. */
  refused?: BatchRefusal;
}

/**
 * Refusals that say something of the person who pressed, not of the approval: whom they may not
 * decide for. Like a refused click on a card, they are told to that person alone, never kept or
 * drawn where the channel sees them (docs/slack.md#batch-triage).
 */
const ABOUT_THE_PRESSER: ReadonlySet<Refusal['code']> = new Set([
  'notAuthorized',
  'standInOnce',
  'ownerNoVote',
]);

/** Whether a skip is about its presser (ABOUT_THE_PRESSER): theirs alone to read. */
export function skippedForThePresser(skip: BatchSkip): boolean {
  return ABOUT_THE_PRESSER.has(skip.refusal.code);
}

/** What of an outcome all may see on the summary: what was decided, and what changed meanwhile. */
export function publicOutcome(outcome: BatchOutcome): BatchOutcome {
  const skipped = outcome.skipped.filter((s) => !skippedForThePresser(s));
  return skipped.length === outcome.skipped.length ? outcome : { ...outcome, skipped };
}

/** What a summary card shows: the relay hands it over, slack/ renders and posts it. */
export interface SummaryView {
  groupId: string;
  channel: string;
  shared: BatchShared;
  /** The members the card lists and its buttons decide (at most BATCH_MAX_MEMBERS). */
  members: BatchMember[];
  /** How many are in the group, listed or not. */
  total: number;
  /** The last batch decision taken from this summary. */
  last?: BatchOutcome;
  /** The group emptied: the card says so, without buttons. */
  closed?: boolean;
}
