import type { Intake } from '../domain/record.js';

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
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
  const withheld = intake.parts.availableChoices?.choicesWithheld ?? 0;
  if (withheld > 0) {
    // A press names a choice by its id alone: the bot and the host could each take a different one.
    notes.push(
      `:no_entry_sign: *${plural(withheld, 'choice', 'choices')} the host offered under a shared id ${withheld === 1 ? 'is' : 'are'} not offered here: a press could not say which one it meant.* Decide in the agent itself to pick ${withheld === 1 ? 'it' : 'one of them'}.`,
    );
  }
  return notes;
}
