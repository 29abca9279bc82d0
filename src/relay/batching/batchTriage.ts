import type { Logger } from 'pino';
import {
  BATCH_MAX_MEMBERS,
  type BatchMember,
  type BatchOutcome,
  type BatchShared,
  batchGroupOf,
  batchMemberOf,
  batchShapeOf,
  type SummaryView,
} from '../../domain/batchGroup.js';
import type { ApprovalRecord, CardPlace } from '../../domain/record.js';
import {
  type BatchGroups,
  channelOfGroup,
  type GroupJoins,
  type GroupState,
  type Joining,
  type JoinResult,
  MAX_MEMBERS_PER_CALL,
} from '../../store/batchGroups.js';
import { TrailingThrottle } from '../../util/trailingThrottle.js';
import type { RecordFollower } from '../records/recordFollowers.js';

/** Where summary cards live. slack/ implements it. */
export interface SummaryBoard {
  post(channel: string, view: SummaryView): Promise<string>;
  update(channel: string, ts: string, view: SummaryView): Promise<void>;
}

export interface BatchTriageOptions {
  groups: BatchGroups;
  board: SummaryBoard;
  /** The records of the members a summary lists, read when it is drawn (undefined: gone). */
  records: (approvalIds: readonly string[]) => Promise<Array<ApprovalRecord | undefined>>;
  /** The quorum a record needs now (Authorizer.quorum): above 1, it is decided on its own card. */
  quorum: (record: ApprovalRecord) => number;
  logger: Logger;
  /** A burst of changes becomes one draw after this long; draws of one summary this far apart (default 150 ms, 3 s). */
  redraw?: { settleMs: number; intervalMs: number };
  /** How long a group must hold two members before its summary is posted (default 500 ms). */
  postSettleMs?: number;
  /** How long joins are gathered before they are sent, one script per channel (default 100 ms). */
  joinDelayMs?: number;
  /** How often the open summaries are looked at for members no longer theirs (default 60 s). */
  sweepMs?: number;
}

/** Open summaries one sweep looks at, at most. */
const SWEEP_MAX = 200;

/** Approvals whose group this process remembers (see `placed`). */
const MAX_PLACED = 10_000;

/** One group's joins gathered until they are sent. */
interface Gathered {
  shared: BatchShared;
  joins: Joining[];
}

/**
 * The group this process last placed an approval in (null: none), and what of its record that was
 * worked out from. A record is copied, never changed, so the same objects mean the same question:
 * a later write that changes none of them (most do not) costs no working-out.
 */
interface Placed {
  groupId: string | null;
  phase: ApprovalRecord['phase'];
  ts: string;
  subject: ApprovalRecord['subject'];
  requirement: ApprovalRecord['currentRequirementId'];
  choices: ApprovalRecord['availableChoices'];
  risks: ApprovalRecord['risks'];
}

/** A channel's groups, by id, with joins to send. */
type ChannelJoins = Map<string, Gathered>;

/**
 * Keeps each channel's groups of alike pending approvals (domain/batchGroup.ts) in Redis, and one
 * summary card per group of two or more: posted by whichever replica saw the second member join
 * (an atomic claim), redrawn as members join and leave, closed once the group is empty.
 *
 * Its cost per approval decides whether it may run on every card (docs/performance.md, "Batch
 * triage"): most questions are asked once, and their group never gets a summary. A card joins its
 * group a moment after it is posted (placing): the joins of that moment are one script per
 * channel, whatever the groups. A member leaves when the summary is next drawn (at most once every
 * 3 s per group): the leaves since are one call, and a draw reads its members' records, so a
 * member decided or moved on elsewhere leaves then too.
 */
export class BatchTriage implements RecordFollower {
  /**
   * The group this process last placed each approval in, or null (in none). An approval this
   * process has not placed (another replica or an earlier process did) is taken to be in the group
   * its question gives (batchShapeOf); a draw drops whatever no longer belongs.
   */
  private readonly placed = new Map<string, Placed>();
  private readonly redraws: TrailingThrottle;
  /** channel → its groups' joins, sent when `sending` fires. */
  private gathered = new Map<string, ChannelJoins>();
  private sending: NodeJS.Timeout | undefined;
  /** Summaries claimed here, waiting to be posted. */
  private readonly posting = new Set<NodeJS.Timeout>();
  /** groupId → approvals that left it since its summary was last drawn here. */
  private readonly leaving = new Map<string, Set<string>>();
  private sweeping: NodeJS.Timeout | undefined;

  constructor(private readonly options: BatchTriageOptions) {
    this.redraws = new TrailingThrottle(
      (groupId) =>
        this.redraw(groupId).catch((err: unknown) => {
          this.options.logger.warn({ err, groupId }, 'could not redraw a batch summary');
        }),
      // chat.update is Tier 3 (50+ a minute per workspace) and every card's resolution needs it
      // too: a summary that grows through a burst takes at most one of those every 3 s. The
      // bench's fan-out (5 channels of 600 alike cards) measured this pace against 1 s
      // (docs/performance.md, "Batch triage").
      options.redraw ?? { settleMs: 150, intervalMs: 3_000 },
    );
  }

  /** A card was just posted, and was in no group: it joins its group with the moment's joins. */
  placing(record: ApprovalRecord, place: CardPlace): void {
    this.track(record, place, true);
  }

  follow(record: ApprovalRecord): void {
    // A card not posted yet is in no group.
    if (record.slack.ts) this.track(record, record.slack as CardPlace, false);
  }

  /** `justPosted`: the card was not in any group before (placing). */
  private track(record: ApprovalRecord, place: CardPlace, justPosted: boolean): void {
    const { approvalId } = record;
    const { channel, ts } = place;
    const known = this.placed.get(approvalId);
    if (known && asksAsBefore(known, record, ts)) return;
    // Being decided: it leaves once it is decided (its claim may yet be released), and a click
    // costs nothing here. The summary's buttons check each approval anyway.
    if (record.phase === 'deciding' && known?.groupId !== null) return;
    const group = batchGroupOf(record, this.options.quorum(record), place);
    const groupId = group?.groupId ?? null;
    const placed: Placed = {
      groupId,
      phase: record.phase,
      ts,
      subject: record.subject,
      requirement: record.currentRequirementId,
      choices: record.availableChoices,
      risks: record.risks,
    };
    if (known !== undefined && known.groupId === groupId) {
      this.remember(approvalId, placed);
      return;
    }
    // One this process has not placed (another replica or process did) may be in the group its
    // card asks about.
    const was = known
      ? (known.groupId ?? undefined)
      : justPosted
        ? undefined
        : batchShapeOf(record, place)?.groupId;
    if (was !== undefined && was !== groupId) this.leave(was, approvalId);
    // One this process had not placed joins again, whether or not it is in already: it costs a
    // ZADD that adds nothing.
    if (group) this.join(channel, group.groupId, group.shared, { approvalId, ts });
    this.remember(approvalId, placed);
  }

  /** Keeps what a batch decision did on its summary, and redraws it. */
  async noted(groupId: string, outcome: BatchOutcome): Promise<void> {
    await this.options.groups.note(groupId, JSON.stringify(outcome));
    this.redraws.request(groupId, true);
  }

  /**
   * Starts the sweep: every open summary is drawn now and then, so that one whose members moved
   * on where no process knew their group (after a restart, or past MAX_PLACED: a member is then
   * taken to be in the group its question gives now) is redrawn, or closed, all the same.
   */
  start(): void {
    if (this.sweeping) return;
    this.sweeping = setInterval(() => {
      this.sweepTurn().catch((err: unknown) => {
        this.options.logger.warn({ err }, 'could not sweep the batch summaries');
      });
    }, this.sweepMs);
    this.sweeping.unref();
  }

  private get sweepMs(): number {
    return this.options.sweepMs ?? 60_000;
  }

  /**
   * The sweep's tick: sweeps unless another process has this period's sweep (false). Held for
   * most of a period, so that the next tick anywhere may take the next one.
   */
  async sweepTurn(): Promise<boolean> {
    if (!(await this.options.groups.takeSweep(Math.floor(this.sweepMs * 0.9)))) return false;
    await this.sweep();
    return true;
  }

  /**
   * Draws each open summary, dropping members that no longer belong: one that lost any, or
   * closed, is redrawn; one that is gone is forgotten. A summary that lost none costs Slack
   * nothing (chat.update is Tier 3).
   */
  async sweep(): Promise<void> {
    const { groups } = this.options;
    for (const groupId of await groups.openSummaries(SWEEP_MAX)) {
      const { state, dropped } = await this.current(groupId);
      if (state.state === undefined) await groups.forget(groupId);
      else if (state.state === 'closed') {
        this.redraws.request(groupId);
        await groups.forget(groupId);
      } else if (dropped) this.redraws.request(groupId);
    }
  }

  stop(): void {
    clearInterval(this.sweeping);
    this.sweeping = undefined;
    this.gathered.clear();
    clearTimeout(this.sending);
    this.sending = undefined;
    this.redraws.stop();
    for (const timer of this.posting) clearTimeout(timer);
    this.posting.clear();
  }

  /** Leaves at the group's next draw, which is asked for now. */
  private leave(groupId: string, approvalId: string): void {
    // A join not sent yet is not sent.
    const unsent = this.gathered.get(channelOfGroup(groupId))?.get(groupId);
    if (unsent) unsent.joins = unsent.joins.filter((m) => m.approvalId !== approvalId);
    const left = this.leaving.get(groupId) ?? new Set<string>();
    this.leaving.set(groupId, left);
    left.add(approvalId);
    this.redraws.request(groupId);
  }

  /** Gathers a join, to be sent with the others of its channel in a moment. */
  private join(channel: string, groupId: string, shared: BatchShared, member: Joining): void {
    const groups = this.gathered.get(channel) ?? new Map<string, Gathered>();
    this.gathered.set(channel, groups);
    const group = groups.get(groupId) ?? { shared, joins: [] };
    groups.set(groupId, group);
    group.joins.push(member);
    // A join after a leave in the same draw window: it is a member again.
    this.leaving.get(groupId)?.delete(member.approvalId);
    if (!this.sending) {
      // A moment's cards share one script per channel: a lone question costs its share of one
      // call, not a call of its own (docs/performance.md, "Batch triage"). The summary waits
      // longer than this anyway (postSettleMs).
      this.sending = setTimeout(() => this.send(), this.options.joinDelayMs ?? 100);
      this.sending.unref();
    }
  }

  private send(): void {
    this.sending = undefined;
    const gathered = this.gathered;
    this.gathered = new Map();
    for (const [channel, groups] of gathered) {
      for (const some of callsOf(groups)) {
        this.options.groups.join(channel, some).then(
          (results) => {
            for (const [groupId, result] of results) this.joined(groupId, result);
          },
          (err: unknown) => {
            // What Redis holds is not known now: the next change of each joins again.
            for (const group of some) for (const m of group.members) this.placed.delete(m.approvalId);
            this.options.logger.warn({ err, channel }, 'could not update batch groups');
          },
        );
      }
    }
  }

  private joined(groupId: string, result: JoinResult): void {
    if (result === 'post') {
      // Posted once the group has held for a moment: a card whose question changes as soon as it
      // is posted (the host updates it) joins and leaves, and must not post a summary each time.
      const timer = setTimeout(() => {
        this.posting.delete(timer);
        this.post(groupId).catch((err: unknown) => {
          this.options.logger.warn({ err, groupId }, 'could not post a batch summary');
        });
      }, this.options.postSettleMs ?? 500);
      timer.unref();
      this.posting.add(timer);
    } else if (result === 'refresh') this.redraws.request(groupId);
  }

  private remember(approvalId: string, placed: Placed): void {
    // The first seen out first (a Map iterates in insertion order): not moved to the end on each
    // change, as a delete and set would, which leaves a hole for the Map to compact every time.
    if (this.placed.size >= MAX_PLACED && !this.placed.has(approvalId)) {
      this.placed.delete(this.placed.keys().next().value!);
    }
    this.placed.set(approvalId, placed);
  }

  /**
   * The group as Redis holds it, after the leaves gathered here, with its first members read from
   * their records; members that no longer belong (decided, moved on, gone) leave at once and it
   * is read again.
   */
  private async current(
    groupId: string,
  ): Promise<{ state: GroupState; members: BatchMember[]; dropped: boolean }> {
    const { groups, records, quorum } = this.options;
    let leaving = this.takeLeaving(groupId);
    let dropped = false;
    for (;;) {
      let state: GroupState;
      try {
        state = await groups.draw(groupId, BATCH_MAX_MEMBERS, leaving);
      } catch (err) {
        // Not sent, or not known to be: they leave at the next draw.
        for (const id of leaving) this.leave(groupId, id);
        throw err;
      }
      const read = await records(state.memberIds);
      const members: BatchMember[] = [];
      const gone: string[] = [];
      state.memberIds.forEach((approvalId, i) => {
        const record = read[i];
        if (record && belongs(record, groupId, quorum(record))) members.push(batchMemberOf(record));
        else gone.push(approvalId);
      });
      if (gone.length === 0) return { state, members, dropped };
      leaving = gone;
      dropped = true;
    }
  }

  private takeLeaving(groupId: string): string[] {
    const left = this.leaving.get(groupId);
    if (!left) return [];
    this.leaving.delete(groupId);
    return [...left].slice(0, MAX_MEMBERS_PER_CALL);
  }

  /** This replica won the claim: post the summary, then catch up with what changed meanwhile. */
  private async post(groupId: string): Promise<void> {
    const channel = channelOfGroup(groupId);
    const { state, members } = await this.current(groupId);
    if (state.state !== 'posting' || !state.shared) return;
    // Fewer than two still ask alike: no summary; the claim goes, so a later join may post.
    if (members.length < 2) {
      await this.options.groups.unclaim(groupId);
      return;
    }
    const { groups, logger } = this.options;
    // The post waits behind the cards its channel is posting, a second each in a burst: the claim
    // is kept alive meanwhile, or the next join would claim it again and post a second summary.
    const renewing = setInterval(() => {
      groups.renew(groupId).catch((err: unknown) => {
        logger.warn({ err, groupId }, 'could not renew the claim to post a batch summary');
      });
    }, groups.renewEveryMs);
    renewing.unref();
    let ts: string;
    try {
      ts = await this.options.board.post(channel, viewOf(groupId, channel, state.shared, state, members));
    } finally {
      clearInterval(renewing);
    }
    if (await groups.posted(groupId, ts)) await this.redraw(groupId, state.rev);
    else logger.warn({ groupId, ts }, 'a batch summary was posted after its claim ran out');
  }

  /**
   * Draws the summary from Redis; when a join or leave came in meanwhile (rev moved), asks for
   * another draw, so that whichever replica draws last draws what Redis holds last (at the
   * throttle's pace: in a burst, one draw every 3 s, not one per join).
   */
  private async redraw(groupId: string, drawnRev?: number): Promise<void> {
    const channel = channelOfGroup(groupId);
    const { state, members } = await this.current(groupId);
    if (state.state === 'posting' || !state.ts || !state.shared) return;
    if (state.rev === drawnRev) return;
    const view = viewOf(groupId, channel, state.shared, state, members);
    await this.options.board.update(channel, state.ts, view);
    // Drawn closed: the sweep has nothing more to do for it.
    if (state.state === 'closed') await this.options.groups.forget(groupId);
    if ((await this.options.groups.rev(groupId)) !== state.rev) this.redraws.request(groupId);
  }
}

/** A channel's gathered joins as calls of at most MAX_MEMBERS_PER_CALL members each. */
function callsOf(groups: ChannelJoins): GroupJoins[][] {
  const calls: GroupJoins[][] = [];
  let call: GroupJoins[] = [];
  let size = 0;
  for (const [groupId, { shared, joins: members }] of groups) {
    for (let at = 0; at < members.length; ) {
      if (size === MAX_MEMBERS_PER_CALL) {
        calls.push(call);
        call = [];
        size = 0;
      }
      const some = members.slice(at, at + MAX_MEMBERS_PER_CALL - size);
      call.push({ groupId, shared, members: some });
      size += some.length;
      at += some.length;
    }
  }
  if (size > 0) calls.push(call);
  return calls;
}

/** Whether a record asks what it asked when it was placed: the same phase, card and question. */
function asksAsBefore(known: Placed, record: ApprovalRecord, ts: string): boolean {
  return (
    known.phase === record.phase &&
    known.ts === ts &&
    known.subject === record.subject &&
    known.requirement === record.currentRequirementId &&
    known.choices === record.availableChoices &&
    known.risks === record.risks
  );
}

/** Whether a member's record still asks what its group asks (or is being decided there). */
function belongs(record: ApprovalRecord, groupId: string, quorum: number): boolean {
  // Joined just ahead of the write that says where its card is (placing): that write may not be
  // read back yet, and dropping it would empty and close a summary in the middle of a burst.
  if (!record.slack.ts) return record.phase === 'pending' || record.phase === 'deciding';
  if (record.phase === 'deciding') return batchShapeOf(record)?.groupId === groupId;
  return batchGroupOf(record, quorum)?.groupId === groupId;
}

function viewOf(
  groupId: string,
  channel: string,
  shared: BatchShared,
  state: GroupState,
  members: BatchMember[],
): SummaryView {
  return {
    ...(state.state === 'closed' ? { closed: true } : {}),
    groupId,
    channel,
    shared,
    members,
    total: state.total,
    ...(state.note ? { last: JSON.parse(state.note) as BatchOutcome } : {}),
  };
}
