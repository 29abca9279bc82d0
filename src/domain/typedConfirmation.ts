// A typed confirmation: what a risk rule with `confirm: type` asks the approver to type before an
// approving choice is sent (relay/deciding/typedConfirmation.ts decides when; routing/
// confirmTarget.ts which word).

/** Where the word to type came from: the modal names it ("Type the host …"). */
export type TargetSource = 'host' | 'file' | 'argument' | 'program' | 'tool';

export interface ConfirmTarget {
  text: string;
  source: TargetSource;
  /** The target was too long to type: `text` is its end (the modal says "the end of …"). */
  end?: true;
}

export interface TypedConfirmation {
  target: ConfirmTarget;
  /** The rules that asked for it, in the record's order, with their warnings (the modal names them). */
  risks: { name: string; warning: string }[];
}

/**
 * Whether `typed` confirms `target`: exactly the same text, but for spaces around it (a paste
 * often brings them) and zero-width spaces. The modal shows the target escaped, with U+200B after
 * an `@` and between backticks, so a copy of it brings them; a target never holds one itself (one
 * that does is not asked for: relay/deciding/typedConfirmation.ts). Hosts are compared in lower
 * case, as DNS reads them.
 */
export function confirmsTarget(typed: string | undefined, target: ConfirmTarget): boolean {
  if (typed === undefined) return false;
  const text = typed.replaceAll('\u200B', '').trim();
  return target.source === 'host' ? text.toLowerCase() === target.text.toLowerCase() : text === target.text;
}
