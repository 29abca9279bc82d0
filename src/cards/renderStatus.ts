import type { KnownBlock } from '@slack/types';
import { askedOtherwise } from '../domain/claimCredit.js';
import { decisionTone } from '../domain/decisionWords.js';
import { hostHeldScope } from '../domain/grants/hostRule.js';
import { type ApprovalRecord, type Claim, type Resolution, rulePersistence } from '../domain/record.js';
import { packSections, section } from './blocks.js';
import type { CardBudget } from './budget.js';
import { describeDecision, describeResolution, hostNamedDecider } from './describeDecision.js';
import { clip } from './escape.js';
import { mentionUser } from './mentionUser.js';
import { clipProse, truncateProse } from './prose.js';
import { timedOutLine } from './renderEscalation.js';
import { callerText, capabilitiesText, grantRefText, revokeHint } from './renderGrant.js';
import { slackDate } from './slackDate.js';

const REVIEWING =
  ':hourglass_flowing_sand: An automated reviewer is looking at this. Buttons appear here if it hands the decision to a person.';
const SUPERSEDED =
  ':arrows_counterclockwise: Superseded: the agent host closed this request without a decision. Nothing was decided here.';
const HELD_ELSEWHERE =
  ':no_entry_sign: Another agent client (someone’s terminal, say) holds this session, so it cannot be decided from Slack until that client lets go. Buttons come back when it does.';
const UNKNOWN_TO_HOST =
  ':mag: The agent host said it does not know this request. Countersign is asking it what is still pending; buttons come back if it is.';
const STAGE_MOVED =
  ':arrows_counterclockwise: The agent host moved on to another stage of this request. Countersign is reading it again; that stage’s buttons come back when it has.';
const ALREADY_TERMINAL =
  ':hourglass: The agent host says this request was already decided (it found so recovering from a restart). Nothing can be decided here; the card shows the decision when the host sends it.';
const RESOLVING =
  ':hourglass: The agent host is resolving this request itself (a computer-use takeover). Nothing can be decided here for now; buttons come back if it asks again.';
const ORPHANED =
  ':ghost: The agent host stopped and could not keep this request (non-durable host). Nothing was decided.';

/** Why a card has no buttons while the host still asks. */
const UNAVAILABLE: Record<NonNullable<ApprovalRecord['unavailable']>, string> = {
  heldElsewhere: HELD_ELSEWHERE,
  unknownToHost: UNKNOWN_TO_HOST,
  stageMoved: STAGE_MOVED,
  alreadyTerminal: ALREADY_TERMINAL,
  resolving: RESOLVING,
  routeChanged: ':no_entry: The request changed route after it was asked',
};

/**
 * Why a card asked again on another route takes no decision (record.rerouted): its channel, its
 * approvers and its quorum are the first question's. Route names come from the config file.
 */
function reroutedLine(record: ApprovalRecord): string {
  const change = record.rerouted;
  const what =
    change?.change === 'route' && change.from !== undefined && change.to !== undefined
      ? `(from route ${clip(change.from, 100)} to ${clip(change.to, 100)})`
      : change?.change === 'tool'
        ? '(the agent host asked it again for another tool)'
        : '(the agent host asked it again for another session)';
  return `${UNAVAILABLE.routeChanged} ${what}: its approvers here are not the ones it needs now, so it is not decided from this card. It stays pending at the agent host.`;
}

const RESOLVED_BY: Record<string, string> = {
  policy: 'policy',
  llmJudge: 'automated reviewer',
  user: 'user (another client)',
};

const DURABILITY: Record<string, string> = {
  session: 'for this session',
  localPersistent: 'saved in this workspace',
};

/**
 * Who decided, safe for mrkdwn. `nameOf` gives a Slack user's name where a mention would ping
 * them (a thread reply, a DM); without a name the user is mentioned.
 */
export function decidedBy(resolution: Resolution, nameOf?: NameOf): string {
  const who = deciders(resolution, nameOf);
  // A quorum names each voter who stood in (deciders); one decider is named for whom here.
  if (!resolution.onBehalfOf || (resolution.voters?.length ?? 0) > 1) return who;
  // A delegate decided for someone away: both are named, the one away as "for @X".
  return `${who} for ${personAway(resolution.onBehalfOf, nameOf)}`;
}

type NameOf = (userId: string) => string | undefined;

/** A person by name (mrkdwn-safe), else mentioned. */
function person(userId: string, nameOf?: NameOf): string {
  const name = nameOf?.(userId);
  return name ? clip(name, 80) : mentionUser(userId);
}

/** Someone a delegate stood in for: "@name", else mentioned. */
function personAway(userId: string, nameOf?: NameOf): string {
  const name = nameOf?.(userId);
  // Escaped with its "@": a name "channel" must not make "@channel".
  return name ? clip(`@${name}`, 81) : mentionUser(userId);
}

function deciders(resolution: Resolution, nameOf?: NameOf): string {
  // A quorum: every approver it counted, the last (who completed it) among them, each who voted
  // as someone's delegate "for @X".
  if (resolution.voters && resolution.voters.length > 1) {
    return resolution.voters
      .map((id) => {
        const stoodInFor = resolution.stoodInFor?.[id];
        return stoodInFor
          ? `${person(id, nameOf)} for ${personAway(stoodInFor, nameOf)}`
          : person(id, nameOf);
      })
      .join(' and ');
  }
  if (resolution.slackUserId) return person(resolution.slackUserId, nameOf);
  if (resolution.via === 'timeout') return 'the escalation timeout (nobody answered in time)';
  if (resolution.via === 'grant') {
    return resolution.grant ? `a remembered grant, ${grantRefText(resolution.grant)}` : 'a remembered grant';
  }
  return Object.hasOwn(RESOLVED_BY, resolution.resolvedBy)
    ? RESOLVED_BY[resolution.resolvedBy]!
    : hostNamedDecider(resolution.resolvedBy);
}

function durability(value: string): string {
  return Object.hasOwn(DURABILITY, value) ? DURABILITY[value]! : clipProse(value, 60);
}

const HOST_KEEPS =
  ':house: The agent host keeps this rule, not Countersign: it is listed in `/countersign grants`, and can only be removed on the host side (MSP has no call to revoke it).';

/** What a person's "don't ask again" left behind. */
function rememberedLine(record: ApprovalRecord): string[] {
  const r = record.remembered;
  if (!r) return [];
  const what = capabilitiesText(r.capabilities, 200);
  const until = r.expiresAt ? `until ${slackDate(r.expiresAt) ?? clipProse(r.expiresAt, 40)}` : 'for now';
  const caller = callerText(r.caller ?? record.caller, record.sessionId);
  if (r.usesLeft !== undefined) {
    const uses = r.usesLeft === 1 ? 'the next use' : `the next ${r.usesLeft} uses`;
    return [
      `:repeat: *Remembered:* ${what} ${caller}, for ${uses}, ${until}. The same request is approved without asking that many times. ${revokeHint(r.grantId)}`,
    ];
  }
  return [
    `:repeat: *Remembered:* ${what} ${caller}, ${until}. The same request is approved without asking until then. ${revokeHint(r.grantId)}`,
  ];
}

/** At most this many earlier stages are named; a longer command says how many more there were. */
const MAX_EARLIER_STAGES = 10;

type EarlierStages = Pick<ApprovalRecord, 'stageDecisions' | 'subject' | 'grantUses'>;

/**
 * Who decided the earlier stages of a command asked stage by stage (record.stageDecisions), so
 * that the card, its thread line and the owner's DM do not credit the whole command to whoever
 * decided its last stage. `grants: false` leaves out the stages a grant decided, for the card,
 * whose grantUseLines name those already.
 */
export function earlierStageLines(
  record: EarlierStages,
  { nameOf, grants }: { nameOf?: NameOf; grants: boolean },
): string[] {
  const decided = (record.stageDecisions ?? []).filter((d) => grants || d.via !== 'grant');
  const lines = decided.slice(0, MAX_EARLIER_STAGES).map((d) => {
    const stage = record.subject.stages?.find((s) => s.requirementId.sourceIndex === d.sourceIndex);
    const which = stage ? `Stage ${stage.position} of ${stage.totalStages}` : 'An earlier stage';
    const grant =
      d.via === 'grant' ? record.grantUses?.find((u) => u.sourceIndex === d.sourceIndex) : undefined;
    const by = decidedBy(
      {
        decision: d.decision ?? '',
        resolvedBy: 'user',
        decidedAt: '',
        via: d.via,
        ...(d.userId ? { slackUserId: d.userId } : {}),
        ...(d.voters ? { voters: d.voters } : {}),
        ...(d.stoodInFor ? { stoodInFor: d.stoodInFor } : {}),
        ...(d.onBehalfOf ? { onBehalfOf: d.onBehalfOf } : {}),
        ...(grant ? { grant } : {}),
      },
      nameOf,
    );
    // A record stored before stage decisions kept their decision says only who decided.
    return d.decision ? `${which}: *${describeDecision(d.decision)}* by ${by}` : `${which}: decided by ${by}`;
  });
  const more = decided.length - MAX_EARLIER_STAGES;
  if (more > 0) lines.push(`…and ${more} more earlier stage${more === 1 ? '' : 's'}`);
  return lines;
}

/** Stages a remembered grant decided before this card was shown. */
function grantUseLines(record: ApprovalRecord): string[] {
  return (record.grantUses ?? []).map((use) => {
    const stage = record.subject.stages?.find((s) => s.requirementId.sourceIndex === use.sourceIndex);
    const which = stage ? `Stage ${stage.position} of ${stage.totalStages}` : 'An earlier stage';
    return `:repeat: ${which} was approved by a remembered grant, ${grantRefText(use)}.`;
  });
}

/** `hostHeld`: the rule is listed in /countersign grants as a host-held grant (hostHeldScope). */
function resolvedLines(
  resolution: Resolution,
  budget: CardBudget,
  hostHeld: boolean,
  timedOutAfterMs?: number,
): string[] {
  const tone = decisionTone(resolution.decision);
  const icon =
    tone === 'approve' ? ':white_check_mark:' : tone === 'reject' ? ':no_entry:' : ':grey_question:';
  const lines =
    resolution.via === 'timeout' && timedOutAfterMs !== undefined ? [timedOutLine(timedOutAfterMs)] : [];
  lines.push(`${icon} *Decision:* ${describeResolution(resolution)}`);
  lines.push(`*Decided by:* ${decidedBy(resolution)}`);
  lines.push(`*When:* ${slackDate(resolution.decidedAt) ?? clipProse(resolution.decidedAt, 60)}`);
  if (resolution.policyResult) lines.push(`*Policy result:* ${clipProse(resolution.policyResult, 40)}`);
  const persistence = rulePersistence(resolution);
  if (persistence?.status === 'failed') {
    const why = persistence.reason ? ` (${truncateProse(persistence.reason, budget.reason)})` : '';
    // Without an amendment the host's words for the rule are not known (none sent, or unread).
    const rule = resolution.amendment
      ? truncateProse(resolution.amendment.rulePreview, budget.reason)
      : 'the rule';
    lines.push(
      `:warning: *Rule not saved*${why}: the host could not save ${rule}. The decision itself stands; the agent will ask again next time.`,
    );
  } else if (resolution.amendment) {
    const { rulePreview, durability: d } = resolution.amendment;
    lines.push(`*Rule saved* (${durability(d)}): ${truncateProse(rulePreview, budget.reason)}`);
    if (hostHeld) lines.push(HOST_KEEPS);
  }
  if (resolution.feedback) lines.push(`*Feedback:* ${truncateProse(resolution.feedback, budget.reason)}`);
  return lines;
}

const DECIDED_VIA: Record<string, string> = {
  grant: 'a remembered grant',
  timeout: 'the escalation timeout',
};

/** The host asked the stage again after the choice in flight was made (domain/claimCredit.ts). */
const ASKED_OTHERWISE = ' (the request changed after that choice was made)';

/** Who made a claim's decision, and the choice as the card may name it. */
function claimWords(record: ApprovalRecord, claim: Claim): { by: string; what: string } {
  // The choices held now are the question asked now: once the host asked it otherwise, the
  // claim's choiceId may carry another label ("Reject" become "Allow"), never what was chosen.
  const choice = record.availableChoices.find((c) => c.choiceId === claim.choiceId);
  const label = choice ? ` (${clipProse(choice.label, 75)})` : '';
  const what = askedOtherwise(record, claim) ? ASKED_OTHERWISE : label;
  const by = claim.userId ? mentionUser(claim.userId) : (DECIDED_VIA[claim.via ?? ''] ?? 'Countersign');
  return { by, what };
}

/**
 * An orphaned card whose decision was in flight as its host went away: the host may have applied
 * it, and no host will say (the audit trail's entry says the same).
 */
function orphanedLine(record: ApprovalRecord): string {
  const claim = record.unsettledClaim;
  if (!claim) return ORPHANED;
  const { by, what } = claimWords(record, claim);
  return `:ghost: The agent host stopped and could not keep this request (non-durable host). The decision by ${by}${what} was sent to it first; whether it took it before it stopped is not known.`;
}

/** Held elsewhere with a decision in flight: it waits, as its card, for the other client to let go. */
function heldWithClaimLine(record: ApprovalRecord & { claim: Claim }): string {
  const { by, what } = claimWords(record, record.claim);
  return `:no_entry_sign: Another agent client (someone’s terminal, say) holds this session. The decision by ${by}${what} was on its way: Countersign finishes it, or learns how it ended, when that client lets go.`;
}

function decidingLine(record: ApprovalRecord): string {
  const claim = record.claim;
  if (!claim) return ':hourglass: Being decided…';
  const { by, what } = claimWords(record, claim);
  const line = `:hourglass: Being decided by ${by}…${what}`;
  if (!claim.unanswered) return line;
  const times = claim.unanswered === 1 ? 'once' : `${claim.unanswered} times`;
  return `${line}\n:warning: The agent host has not answered yet; asked again ${times}. The decision is sent as soon as it answers.`;
}

/** What the card says about where the approval stands. Pending cards say it with buttons instead. */
export function renderStatus(record: ApprovalRecord, budget: CardBudget): KnownBlock[] {
  const uses = [...grantUseLines(record), ...earlierStageLines(record, { grants: false })];
  const phase = phaseStatus(record, budget);
  return uses.length > 0 ? [...packSections(uses), ...phase] : phase;
}

function phaseStatus(record: ApprovalRecord, budget: CardBudget): KnownBlock[] {
  switch (record.phase) {
    case 'reviewing':
      return [section(REVIEWING)];
    case 'pending':
      return [];
    case 'deciding':
      return [section(decidingLine(record))];
    case 'unavailable':
      if (record.rerouted) return [section(reroutedLine(record))];
      if (record.unavailable === 'heldElsewhere' && record.claim)
        return [section(heldWithClaimLine({ ...record, claim: record.claim }))];
      return [section(UNAVAILABLE[record.unavailable ?? 'unknownToHost'])];
    case 'resolved':
      return record.resolution
        ? packSections([
            ...resolvedLines(
              record.resolution,
              budget,
              hostHeldScope(record) !== undefined,
              record.escalation?.timedOutAfterMs,
            ),
            ...rememberedLine(record),
          ])
        : [section('Decided. The host did not say how.')];
    case 'superseded': {
      const note = record.supersededNote ? `\n${truncateProse(record.supersededNote, budget.reason)}` : '';
      return [section(`${SUPERSEDED}${note}`)];
    }
    case 'orphaned':
      return [section(orphanedLine(record))];
    default:
      return [];
  }
}
