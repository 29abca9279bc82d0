import type { Logger } from 'pino';
import type { Authorization } from '../../domain/authorization.js';
import { needsQuorum, outlastsRequest, timeoutChoice } from '../../domain/decisionWords.js';
import type { Grant, GrantStore } from '../../domain/grants/grant.js';
import { findGrant, grantQuestion, sessionCallerOf } from '../../domain/grants/match.js';
import { questionDigest } from '../../domain/questionDigest.js';
import { type ApprovalRecord, votersFor } from '../../domain/record.js';
import { type EscalationStep, OPEN_RULES, type RouteGrants } from '../../domain/route.js';
import { confirmsTarget } from '../../domain/typedConfirmation.js';
import { LogBudget } from '../../util/logBudget.js';
import type { Authorizer } from './authorizer.js';
import type { DecidedBy, Recounted, Unwarranted, WarrantAsk } from './decision.js';
import { reasonMissing } from './reasonRule.js';
import { typedConfirmationFor } from './typedConfirmation.js';

export type { Recounted, Unwarranted, WarrantAsk };

// Whether a decision may be made on a record as it stands, by whoever or whatever made it: the
// same rules a click, a grant and a timeout pass where they start, checked again by the Decider
// on the record it is about to claim whenever that is not the record the caller checked (a
// decision forwarded from another replica, or one whose record changed before its claim).

export interface DecisionWarrantOptions {
  authorizer: Pick<Authorizer, 'check' | 'quorum' | 'ownerOf' | 'authority'>;
  grants: Pick<GrantStore, 'get'>;
  /** The grants of the route a record names (undefined: none). */
  grantsOf: (route: string | undefined) => RouteGrants | undefined;
  /** The escalation ladder of the route a record names. */
  ladderOf: (route: string | undefined) => readonly EscalationStep[];
  /** Told why a grant no longer answers because of its granter; without it, nothing is said. */
  logger?: Logger;
  now?: () => Date;
}

export class DecisionWarrant {
  private readonly now: () => Date;
  /**
   * A granter who may no longer decide is said so at each request their grant would answer
   * until it ends: an agent repeating a command would fill the log.
   */
  private readonly granterRefusals: LogBudget | undefined;

  constructor(private readonly options: DecisionWarrantOptions) {
    this.now = options.now ?? (() => new Date());
    this.granterRefusals =
      options.logger &&
      new LogBudget(options.logger, {
        summary: 'grants whose granter may no longer decide were refused again; lines skipped',
      });
  }

  /**
   * Why `ask` may not be made on `record`, or undefined when it may (`recounted`: it may, by the
   * voters who count now). `record` has passed whyNotDecidable for it: its stage is the one asked
   * about and the choice is offered.
   */
  async check(record: ApprovalRecord, ask: WarrantAsk): Promise<Unwarranted | Recounted | undefined> {
    switch (ask.by.via) {
      case 'click':
        return this.click(record, ask, ask.by);
      case 'grant':
        return (await this.grantAnswers(record, ask, ask.by))
          ? undefined
          : { kind: 'unwarranted', via: 'grant' };
      case 'timeout':
        return this.timeoutEnds(record, ask) ? undefined : { kind: 'unwarranted', via: 'timeout' };
    }
  }

  /** The person may decide, and an approval needing a quorum has it from people who may decide. */
  private async click(
    record: ApprovalRecord,
    ask: WarrantAsk,
    by: Extract<DecidedBy, { via: 'click' }>,
  ): Promise<Unwarranted | Recounted | undefined> {
    const { authorizer } = this.options;
    const authorization = await authorizer.check(by.userId, record);
    if (!authorization.allowed) return { kind: 'notAuthorized', refused: authorization };
    const choice = record.availableChoices.find((c) => c.choiceId === ask.choiceId);
    // Standing in is read now too: the replica that took the click read it a moment before. A
    // "don't ask again" outlasts the request whatever the choice: its grant is stored once this
    // decision goes through, in the presser's name.
    const standingFor = authorization.because === 'delegate' ? authorization.for : undefined;
    if (standingFor !== undefined && (by.remember || (choice && outlastsRequest(choice))))
      return { kind: 'standInOnce', for: standingFor };
    const { onBehalfOf: _said, ...own } = by;
    const asNow =
      standingFor === by.onBehalfOf ? by : { ...own, ...(standingFor ? { onBehalfOf: standingFor } : {}) };
    const restated = asNow === by ? undefined : ({ kind: 'recounted', by: asNow } as const);
    // What the person saw (a confirmation modal, a batch summary) must be what is asked now: the
    // host may re-ask the stage with another command between their check and this claim.
    if (by.askedAs !== undefined && by.askedAs !== questionDigest(record)) return { kind: 'askedOtherwise' };
    // The target is read from the record as it is now: a question that changed asks for its own.
    const confirmation = choice && typedConfirmationFor(record, choice);
    if (confirmation && !confirmsTarget(by.typed, confirmation.target)) {
      return { kind: 'unconfirmed', confirmation };
    }
    // The route's reason rule as it is now, read as the ClickHandler reads it: the replica that
    // took the click checked it against its own configuration, which may differ from this one.
    const rules = authorizer.authority(record).rules ?? OPEN_RULES;
    const missing = choice && reasonMissing(record, choice, rules, ask.feedback);
    if (missing) return missing;
    const quorum = authorizer.quorum(record);
    if (quorum <= 1 || !choice || !needsQuorum(choice.decision)) return restated;
    // As ClickHandler.vote counts them: the host's owner has no vote, and each voter must still
    // be one who may decide (rules and group membership may have changed since they voted).
    const owner = authorizer.ownerOf(record);
    const voters = votersFor(record, ask.sourceIndex, ask.choiceId).filter((userId) => userId !== owner);
    // The person deciding was checked above: their vote is not checked a second time.
    const allowed = await Promise.all(
      voters.map((userId) => (userId === by.userId ? authorization : authorizer.check(userId, record))),
    );
    // A voter standing in now decides for the request only: nothing that outlasts it (routing.md).
    const counts = allowed.map((a) => a.allowed && !(a.because === 'delegate' && outlastsRequest(choice)));
    const counted = voters.filter((_, i) => counts[i]);
    // Whose rights each counted vote stands for: a delegate's and the delegator's count once.
    // The owner's rights never count, even through a delegate standing in for them.
    const principals = new Set(
      allowed
        .flatMap((a, i) => (counts[i] && a.allowed ? [a.because === 'delegate' ? a.for : voters[i]!] : []))
        .filter((principal) => principal !== owner),
    );
    if (principals.size < quorum || !counted.includes(by.userId)) {
      return { kind: 'quorumNotMet', votes: principals.size, quorum };
    }
    // Who stands in for whom is read now too, whatever each voter stood for when they voted.
    const stoodInFor = Object.fromEntries(
      voters.flatMap((userId, i) => {
        const authorization = allowed[i]!;
        return counts[i] && authorization.allowed && authorization.because === 'delegate'
          ? [[userId, authorization.for] as const]
          : [];
      }),
    );
    if (namesAsCounted(by, counted, stoodInFor)) return restated;
    // The decision names only those who count now, and whom each of them stands in for.
    const { voters: _named, stoodInFor: _stood, ...rest } = asNow;
    return {
      kind: 'recounted',
      by: { ...rest, voters: counted, ...(Object.keys(stoodInFor).length > 0 ? { stoodInFor } : {}) },
    };
  }

  /** A live grant, as stored now, answers this stage of the record with this choice. */
  private async grantAnswers(
    record: ApprovalRecord,
    ask: WarrantAsk,
    by: Extract<DecidedBy, { via: 'grant' }>,
  ): Promise<boolean> {
    const settings = this.options.grantsOf(record.route);
    const question = settings?.enabled ? grantQuestion(record) : undefined;
    if (!question || question.once.choiceId !== ask.choiceId || question.sourceIndex !== ask.sourceIndex) {
      return false;
    }
    // The grant's read is issued first, in this synchronous stretch: before the first send it
    // rides the write that claims the stage (GrantAnswerer.readGrant). The granter's check goes
    // alongside, from this process's copy of what Slack said once it is known (SharedLookups).
    const [grant, granter] = await Promise.all([
      this.options.grants.get(by.grant.grantId),
      this.options.authorizer.check(by.grant.grantedBy, record),
    ]);
    if (!grant || grant.grantedBy !== by.grant.grantedBy) return false;
    // A grant by uses had this decision's use taken, atomically, by whoever found it: what is
    // left is not counted again here; everything else must still match.
    const { usesLeft: _taken, ...unspent } = grant;
    if (findGrant([unspent], question, this.now(), sessionCallerOf(record, settings!.choices)) === undefined)
      return false;
    return this.granterMayDecide(record, grant, granter);
  }

  /**
   * A grant decides in its granter's name: only while they may decide the record now, as a click
   * of theirs would be checked (a deactivated, guest or unconfirmed account, one taken off the
   * route's approvers or out of its channel, the host's owner where they may not approve their
   * own agent: none does). A standing they have only as someone's delegate is for deciding once,
   * never a grant's. The grant stays: the granter may be restored, and a revocation is a
   * person's act.
   */
  private granterMayDecide(
    record: ApprovalRecord,
    grant: Pick<Grant, 'grantId' | 'grantedBy'>,
    granter: Authorization,
  ): boolean {
    if (granter.allowed && granter.because !== 'delegate') return true;
    this.granterRefusals?.write(
      {
        approvalId: record.approvalId,
        grantId: grant.grantId,
        grantedBy: grant.grantedBy,
        why: granter.allowed ? 'onlyAsDelegate' : granter.why,
      },
      'a grant’s granter may no longer decide this request; the grant does not answer it',
    );
    return false;
  }

  /** The route's ladder ends in a timeout step, and this is the choice a timeout decides with. */
  private timeoutEnds(record: ApprovalRecord, ask: WarrantAsk): boolean {
    const ladder = this.options.ladderOf(record.route);
    return (
      ladder.at(-1)?.action === 'timeout' && timeoutChoice(record.availableChoices)?.choiceId === ask.choiceId
    );
  }
}

/** The decision already names exactly the voters who count now, each standing in as they do now. */
function namesAsCounted(
  by: Extract<DecidedBy, { via: 'click' }>,
  counted: readonly string[],
  stoodInFor: Readonly<Record<string, string>>,
): boolean {
  const named = by.voters ?? [by.userId];
  const namedStandIns = Object.entries(by.stoodInFor ?? {});
  return (
    named.length === counted.length &&
    named.every((userId) => counted.includes(userId)) &&
    namedStandIns.length === Object.keys(stoodInFor).length &&
    namedStandIns.every(([userId, away]) => stoodInFor[userId] === away)
  );
}
