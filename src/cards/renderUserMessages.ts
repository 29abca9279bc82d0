import type { Refused, Unverified } from '../domain/authorization.js';
import type { Refusal } from '../domain/refusal.js';
import type { Approvers } from '../domain/route.js';
import type { TypedConfirmation } from '../domain/typedConfirmation.js';
import { cutWithMark } from '../util/cutAtCodePoint.js';
import { channelLink } from './channelLink.js';
import { describeDecision, hostNamedDecider } from './describeDecision.js';
import { escapeMrkdwn, inlineCode } from './escape.js';
import { mentionUser } from './mentionUser.js';
import { clipProse } from './prose.js';

// The one place where an outcome becomes the sentence a person reads. Every text here is
// ephemeral and goes only to the person who clicked.

function who(resolvedBy: string, slackUserId?: string): string {
  if (slackUserId) return `<@${slackUserId}>`;
  if (resolvedBy === 'policy') return 'policy';
  if (resolvedBy === 'llmJudge') return 'the automated reviewer';
  if (resolvedBy === 'user') return 'someone outside Slack';
  return hostNamedDecider(resolvedBy);
}

const USERGROUP_ID = /^S[A-Z0-9]{2,40}$/;

/** `<!subteam^S…>`: the group's handle, as Slack shows it; escaped text for anything else. */
function mentionUsergroup(usergroupId: string): string {
  return USERGROUP_ID.test(usergroupId) ? `<!subteam^${usergroupId}>` : escapeMrkdwn(usergroupId);
}

/** "a", "a or b", "a, b or c". */
function oneOf(items: readonly string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}

/**
 * "<@U0ALICE> or members of <!subteam^S0SRE>". Mentions are fine here: the text is ephemeral,
 * seen only by the person refused, and tells them whom to ask.
 */
function whoMay(approvers: Approvers): string | undefined {
  const users = approvers.users.map(mentionUser);
  const groups = approvers.usergroups.map(mentionUsergroup);
  const parts = groups.length > 0 ? [...users, `members of ${oneOf(groups)}`] : users;
  return parts.length > 0 ? oneOf(parts) : undefined;
}

/** One sentence saying why this user may not decide here. */
export function notAuthorizedText(refused: Refused): string {
  const route = escapeMrkdwn(refused.route);
  switch (refused.why) {
    case 'selfApproval':
      return `You cannot approve your own agent's request on ${route}: someone else must decide it.`;
    case 'routeGone':
      return `The route this card was posted by (${route}) is no longer configured, so only admins can decide on it.`;
    case 'notApprover': {
      const who = whoMay(refused.approvers);
      if (refused.protectedWrite) {
        return `This is a protected write: only ${who ?? 'admins'} can decide protected writes on ${route}.`;
      }
      return `Only ${who ?? 'admins'} can decide on ${route}.`;
    }
    case 'notRiskApprover':
      return `This request matches the risk rule ${escapeMrkdwn(refused.risk)}: only ${whoMay(refused.approvers) ?? 'its approvers'} can decide it.`;
    case 'external':
      return `You belong to another Slack workspace or organization, and ${route} does not let its users decide or see its approvals.`;
    case 'guest':
      return `Guests cannot decide or see approvals on ${route}.`;
    case 'deactivated':
      return `Slack says this account is deactivated, so it cannot decide or see approvals on ${route}.`;
    case 'notChannelMember':
      return `Only members of ${channelLink(refused.channel)} can decide on ${route}: join the channel, or ask one of its members.`;
    case 'unverified':
      return unverifiedText(refused.what);
  }
}

/**
 * Why a stranger no route lets in is shown nothing of Countersign (App Home, /countersign help):
 * who they are, never a route, a channel or who decides.
 */
export function noAccessText(refused: Refused): string {
  switch (refused.why) {
    case 'external':
      return 'You have no access to Countersign here: you belong to another Slack workspace or organization, and no route lets its users decide or see approvals.';
    case 'guest':
      return 'You have no access to Countersign here: guests cannot decide or see approvals, and no route lets them in.';
    case 'deactivated':
      return 'You have no access to Countersign here: Slack says this account is deactivated.';
    case 'unverified':
      return refused.what === 'workspace'
        ? 'You have no access to Countersign for now: it has not heard from Slack which workspace it is in yet, so it cannot tell who you are. Please try again in a minute.'
        : 'You have no access to Countersign for now: it could not confirm with Slack who you are (your workspace, whether you are a guest). Please try again in a minute.';
    default:
      return 'You have no access to Countersign here.';
  }
}

/** Slack did not confirm something the decision depends on: nothing was allowed on a guess. */
function unverifiedText(what: Unverified): string {
  switch (what) {
    case 'workspace':
      return 'Countersign has not heard from Slack which workspace it is in yet, so it cannot tell who may decide. Nothing was done: please try again in a minute.';
    case 'user':
      return 'Countersign could not confirm with Slack who you are (your workspace, whether you are a guest), so nothing was done. Please try again in a minute.';
    case 'channel':
      return 'Countersign could not read who is in the channel whose members decide here, so nothing was done. Please try again in a minute.';
  }
}

/**
 * The same refusal inside the reject modal, whose error texts are plain (no mentions): the
 * ephemeral message sent beside it names who may decide.
 */
export function notAuthorizedInModalText(refused: Refused): string {
  if (refused.why === 'notRiskApprover') {
    return `This request matches the risk rule ${refused.risk}, and you are not among its approvers: Countersign sent you a message naming them.`;
  }
  if (refused.why === 'notChannelMember') {
    return `Only members of the channel of ${refused.route} can decide on it: Countersign sent you a message naming it.`;
  }
  if (refused.why !== 'notApprover') return notAuthorizedText(refused);
  const what = refused.protectedWrite ? `protected writes on ${refused.route}` : refused.route;
  return `You are not among those who can decide on ${what} (any more): Countersign sent you a message naming them.`;
}

/** How the target of a typed confirmation is named to the person asked to type it. */
const TARGET_NAMES: Record<TypedConfirmation['target']['source'], string> = {
  host: 'the host',
  file: 'the file’s name',
  argument: 'the command’s target',
  program: 'the program’s name',
  tool: 'the tool’s name',
};

export function targetName(confirmation: TypedConfirmation): string {
  const name = TARGET_NAMES[confirmation.target.source];
  return confirmation.target.end ? `the end of ${name}` : name;
}

/**
 * The confirmation modal's error when what was typed is not the target (plain text, as Slack
 * shows an input's error: the target is not escaped, and is cut to keep the error short).
 */
export function confirmationMismatchText(confirmation: TypedConfirmation): string {
  const { text } = confirmation.target;
  const shown = cutWithMark(text, 80);
  return `That is not ${targetName(confirmation)} (${shown}): nothing was approved. Type it exactly as shown.`;
}

/** The reject modal was submitted without a reason on a route that requires one. */
export function reasonRequiredText(route: string | undefined, quickReasons: boolean): string {
  return `A reason is required to reject on ${route ?? 'this route'}: type one${quickReasons ? ' or pick a quick reason' : ''}.`;
}

/**
 * Room for the host's kind of a refused decide: the relay masks and cuts it (hostRefusal.ts);
 * escaping lengthens it.
 */
const MAX_KIND_SHOWN = 100;

export function refusalText(refusal: Refusal): string {
  switch (refusal.code) {
    case 'unknownCard':
      return 'Countersign has no approval behind this message any more, so this click changed nothing.';
    case 'alreadyResolved':
      return `This approval was already decided: ${describeDecision(refusal.decision)} by ${who(refusal.resolvedBy, refusal.slackUserId)}. Your click changed nothing.`;
    case 'superseded':
      return 'This request was closed by the agent host without a decision (it restarted, or the request was withdrawn). If it still needs one, it is asked again on a new card: decide there.';
    case 'orphaned':
      return 'The agent host stopped and this request died with it. Nothing can be decided here.';
    case 'underReview':
      return 'An automated reviewer holds this request right now. If it hands it to a person, the buttons come back.';
    case 'questionChanged':
      if (refusal.why === 'unnamedForm')
        return 'This form does not say which question it was opened for, so Countersign cannot tell whether it is still the one asked. Nothing was decided. The card now shows the current question: please press its button again.';
      return refusal.why === 'unnamed'
        ? 'This button is from a card posted before Countersign’s buttons named the question they show, so it cannot tell whether it is still the one asked. Nothing was decided. The card now shows the current question: please decide again.'
        : 'The question changed while you were looking (a stage advanced, or the command, the choices or what the card marks changed). Nothing was decided. The card now shows the current question: please decide again.';
    case 'alreadyBeingDecided':
      return refusal.self
        ? 'Your decision on this step is already being sent.'
        : `This step is already being decided by ${refusal.userId ? `<@${refusal.userId}>` : 'someone else'}.`;
    case 'reviewerUnavailable':
      return 'This is a protected write, and the agent host has no live reviewer right now, so it cannot be approved from Slack. Approve it at the host, or try again later.';
    case 'hostUnavailable':
      if (refusal.why === 'stopping')
        return 'Countersign is restarting while the agent host had not yet answered your decision. It is kept: Countersign sends it again once it is back, so there is no need to click again. The card shows the outcome.';
      return 'The agent host is restarting. If it keeps this request, your decision is sent when it is back; if it asks again, a new card says so.';
    case 'sessionElsewhere':
      return 'This session is open in another agent client (someone’s terminal, say), which holds it; it can only be decided there until that client lets go of it.';
    case 'unknownToHost':
      return 'The agent host does not know this request any more. Countersign is asking it what is still pending; the card will show what it says. Nothing was decided.';
    case 'settledByHost':
      return 'The agent host is settling this request itself (it found it already decided, or is resolving it). Nothing was decided here; the card shows how it ends.';
    case 'routeChanged':
      return 'The request changed route after it was asked: the agent host asked it again for another workspace, tool or session than this card was posted for, so it is not decided from this card. Nothing was decided; it stays pending at the agent host.';
    case 'notRecorded':
      return 'Your click could not be recorded: Countersign’s database is not answering. Nothing was decided. Please click again in a minute.';
    case 'forwarded':
      return 'Your choice was recorded and handed to the Countersign replica that runs this agent host, which has not answered yet. It tells you here how it went; the card shows the outcome.';
    case 'stopping':
      return 'Countersign is restarting and did not take this click. Nothing was decided. Please click again in a minute.';
    case 'decideFailed':
      return `The agent host refused the decision (${clipProse(refusal.kind, MAX_KIND_SHOWN)}). Nothing was decided; the card shows the current state.`;
    case 'notAuthorized':
      return notAuthorizedText(refusal.refused);
    case 'cannotRemember':
      return 'This request can no longer be remembered (the question changed, grants are off for this route, or the route no longer offers that scope). Nothing was decided: the card shows the current choices.';
    case 'voteCounted': {
      const more = refusal.quorum - refusal.votes;
      return `Your approval is counted: ${refusal.votes} of ${refusal.quorum}. Nothing is sent to the agent until ${more} more ${more === 1 ? 'approver picks' : 'approvers pick'} the same choice; one rejection stops it.`;
    }
    case 'standInOnce':
      return `You stand in for ${mentionUser(refusal.for)}, so you may allow this request once or reject it; what would outlast it ("don't ask again", for this session, always) is for the approvers themselves. Nothing was decided.`;
    case 'ownerNoVote':
      return refusal.for === undefined
        ? `This request needs ${refusal.quorum} approvers other than the one whose agent asks, so your approval does not count toward it. Nothing was sent; you can still reject it.`
        : `This request needs ${refusal.quorum} approvers other than the one whose agent asks, and you stand in for ${mentionUser(refusal.for)}, whose agent it is: your approval does not count toward it. Nothing was sent; you can still reject it.`;
    case 'grantNotStored':
      if (refusal.why === 'stageMoved')
        return 'Your approval went through, but by then the request had moved on to another step, so Countersign did not remember it: "don\'t ask again" is only stored for the step you pressed it on. The agent will ask again next time.';
      if (refusal.why === 'askedOtherwise')
        return 'Your approval went through, but by then the agent was asking something else on that step than what you saw, so Countersign did not remember it: "don\'t ask again" is only stored for what you approved. The agent will ask again next time.';
      return 'Your approval went through, but Countersign could not store the "don\'t ask again" grant (its database did not answer). The agent will ask again next time.';
    case 'quorumNotMet':
      return `This request needs ${refusal.quorum} approvers to pick the same choice, and only ${refusal.votes} of those who picked it may decide it now. Nothing was sent to the agent.`;
    case 'confirmationNeeded':
      return `Approving this request needs ${targetName(refusal.confirmation)} typed first (risk rule ${inlineCode(refusal.confirmation.risks[0]?.name ?? '', 100)}), and Slack gave no way to ask for it here. Nothing was decided: press the button on the card again.`;
    case 'confirmationMismatch':
      return `What you typed is not ${targetName(refusal.confirmation)}, ${inlineCode(refusal.confirmation.target.text, 200)}. Nothing was approved: press the button on the card again and type it exactly.`;
    case 'reasonRequired': {
      const route = refusal.route === undefined ? undefined : escapeMrkdwn(refusal.route);
      return `${reasonRequiredText(route, refusal.quickReasons)} Nothing was decided: press the button again, and give the reason in the form it opens.`;
    }
    case 'formNotOpened':
      return refusal.form === 'fullView'
        ? 'Slack did not open the full request, so nothing was decided. Please press View full again.'
        : `Slack did not open ${FORMS[refusal.form]}, so nothing was decided. Please press the button again.`;
    case 'cannotShowFull':
      if (refusal.why === 'late')
        return 'Countersign could not tell in time whether you may read this request (Slack or its database answered slowly), and Slack gives only a few seconds to open it. Nothing was decided: please press View full again.';
      return refusal.why === 'gone'
        ? 'Countersign no longer keeps this request, so its full text cannot be shown.'
        : 'The full text could not be read: Countersign’s database is not answering. Please try again in a minute.';
  }
}

/** The forms a press opens before it decides, as a sentence names them. */
const FORMS = {
  reason: 'the form for your reason',
  confirmation: 'the form to type the confirmation in',
} as const;
