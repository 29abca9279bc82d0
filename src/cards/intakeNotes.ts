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
  return notes;
}
