import type { Intake } from '../domain/record.js';

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** How the card names a part intake can report unreadable, in the order it shows them. */
const UNREAD_NAMES: Record<string, string> = {
  reason: 'the reason',
  reviewerReason: "the reviewer's reason",
  cuaCardFacts: 'the computer-use facts',
  subagentOrigin: 'which subagent asked',
};

/** `a`, `a and b`, `a, b and c`. */
function listed(names: string[]): string {
  return names.length < 2 ? (names[0] ?? '') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
}

/**
 * What intake did to the request, said once on the card: the reviewer must know that what they
 * see is not all the agent sent (the markers in the text say where).
 */
export function intakeNotes(intake: Intake | undefined): string[] {
  if (!intake) return [];
  const notes: string[] = [];
  if (intake.maskedSecrets > 0) {
    const secrets = plural(intake.maskedSecrets, 'secret', 'secrets');
    notes.push(
      `:closed_lock_with_key: *${secrets} in this request ${intake.maskedSecrets === 1 ? 'was' : 'were'} masked*`,
    );
  }
  if (Object.values(intake.parts).some((part) => part.truncated)) {
    notes.push(':scissors: *Part of this request was too long to keep and was cut*');
  }
  if (intake.stagesOmitted) {
    notes.push(
      `:scissors: *${plural(intake.stagesOmitted, 'shell stage was', 'shell stages were')} left out*`,
    );
  }
  const unread = Object.keys(UNREAD_NAMES).filter((name) => intake.parts[name]?.unreadable);
  if (unread.length > 0) {
    // Dropped when the frame was parsed (msp/protocol.ts): the card cannot show what it holds.
    notes.push(
      `:grey_question: *Not shown: ${listed(unread.map((name) => UNREAD_NAMES[name]!))}, which the host sent in a form the bot does not read*`,
    );
  }
  const withheld = intake.parts.availableChoices?.choicesWithheld ?? 0;
  if (withheld > 0) {
    // A press names a choice by its id alone: the bot and the host could each take a different one.
    notes.push(
      `:no_entry_sign: *${plural(withheld, 'choice', 'choices')} the host offered under a shared id ${withheld === 1 ? 'is' : 'are'} not offered here: a press could not say which one it meant.* Decide in the agent itself to pick ${withheld === 1 ? 'it' : 'one of them'}.`,
    );
  }
  return notes;
}
