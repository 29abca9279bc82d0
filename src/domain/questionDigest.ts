import { createHash } from 'node:crypto';
import { stringify } from 'safe-stable-stringify';
import type { ApprovalRecord } from './record.js';

/** The parts of a record that make the question a card asks (see questionDigest). */
export type AskedQuestion = Pick<
  ApprovalRecord,
  | 'subject'
  | 'currentRequirementId'
  | 'availableChoices'
  | 'risks'
  | 'protectedWrite'
  | 'judgeEscalated'
  | 'cuaCardFacts'
  | 'argsReasked'
  | 'argsSha256'
>;

/**
 * Of the computer-use facts, what the card shows (cards/renderCuaFacts.ts): the page's host (and
 * its ASCII form where it differs), the window title, the steps and the data it would send. Other
 * fields a host adds are never rendered, so they ask nothing of the person.
 */
function shownScreen(facts: AskedQuestion['cuaCardFacts']): Record<string, unknown> | undefined {
  if (!facts) return undefined;
  const { page, windowTitle, steps, data } = facts;
  const shown: Record<string, unknown> = {};
  if (page)
    shown.page = page.hostAscii && page.hostAscii !== page.host ? [page.host, page.hostAscii] : [page.host];
  if (windowTitle) shown.windowTitle = windowTitle;
  if (steps?.length) shown.steps = steps;
  if (data?.length) shown.data = data;
  return Object.keys(shown).length > 0 ? shown : undefined;
}

/**
 * What the card marks besides the subject that bears on the decision (a protected write, the
 * judge's escalation, the screen), or undefined when it marks none: left out of the digest then,
 * so that an ordinary card's digest is the one its buttons carried before these were covered.
 */
function shownMarks(record: AskedQuestion): Record<string, unknown> | undefined {
  const shown: Record<string, unknown> = {};
  if (record.protectedWrite) shown.protectedWrite = true;
  if (record.judgeEscalated) shown.judgeEscalated = true;
  const screen = shownScreen(record.cuaCardFacts);
  if (screen) shown.screen = screen;
  // The arguments the card shows, once the host asked the approval again with other ones than
  // it first did (record.argsReasked): a card drawn before then showed the earlier ones. Not
  // otherwise, so that the buttons of every card drawn before arguments were covered still work.
  if (record.argsReasked) shown.args = record.argsSha256 ?? '';
  return Object.keys(shown).length > 0 ? shown : undefined;
}

/**
 * A short digest of the question an approval asks now, as its card shows it: its subject, the
 * stage asked about, the choices, the risk rules it matched, and the marks that change what is
 * decided or who must look (a protected write, an escalation by the automated judge, the
 * computer-use facts, the arguments once the host asked again with other ones). Every deciding button and every modal that asks for something typed
 * carries the digest of what it showed, so a press or submit after the host re-asked (another
 * command, or the same one now marked a protected write) decides nothing it did not show.
 */
export function questionDigest(record: AskedQuestion): string {
  const asked: unknown[] = [
    record.subject,
    record.currentRequirementId,
    record.availableChoices,
    record.risks ?? [],
  ];
  const marks = shownMarks(record);
  // Only where there are any: a fifth element, so no question without marks digests like one with.
  if (marks) asked.push(marks);
  // Keys sorted: the replica that opened the modal and the one that takes its submit may hold the
  // same record with its keys in another order (built from the host's frame, or read from Redis).
  return createHash('sha256')
    .update(stringify(asked) ?? '')
    .digest('base64url')
    .slice(0, 22);
}
