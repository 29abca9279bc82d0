import { ruleAsPressed } from '../claimCredit.js';
import type { ApprovalRecord } from '../record.js';

/**
 * The scope of the host-held grant a resolved record stands for (relay/grants/grantMaker.ts
 * lists it in /countersign grants), or undefined when it stands for none: a person's host choice
 * scoped session or localPersistent, with the host's amendment of that very durability. The card
 * says the rule is listed by the same test, so it never says so of one that is not.
 */
export function hostHeldScope(record: ApprovalRecord): string | undefined {
  const resolution = record.resolution;
  if (record.phase !== 'resolved' || !resolution?.amendment || !resolution.slackUserId) return undefined;
  // A resolution names its person only for the question their choice was pressed on, and for the
  // rule that choice asks for (resolved(), claimCredit.ts); a resolved record's question never
  // changes: this is the choice pressed. The durability is checked all the same (ruleAsPressed,
  // which holds the rule each scope leaves: none for `once`), for records resolved before it was.
  const choice = record.availableChoices.find((c) => c.choiceId === resolution.choiceId);
  return choice && ruleAsPressed(choice.scope, resolution.amendment) ? choice.scope : undefined;
}
