import { decisionTone } from '../../domain/decisionWords.js';
import type { ApprovalRecord } from '../../domain/record.js';
import type { ConfirmTarget, TypedConfirmation } from '../../domain/typedConfirmation.js';
import type { ApprovalChoice } from '../../msp/protocol.js';
import { confirmTarget } from '../../routing/confirmTarget.js';
import { hasHiddenCharacters } from '../../util/hiddenCharacters.js';

// When a pick needs the target typed first: the record matched a risk rule with `confirm: type`
// (kept on the record, so a restart with another file does not loosen it), and the pick is not
// one that plainly stops the agent. As with a quorum, a decision word the bot does not know may
// let the agent go ahead, so it is confirmed too; a rejection never is.

/** What `choice` on `record`, as it stands, asks to be typed; undefined when nothing. */
export function typedConfirmationFor(
  record: Pick<ApprovalRecord, 'risks' | 'subject' | 'currentRequirementId' | 'tool'>,
  choice: Pick<ApprovalChoice, 'decision'>,
): TypedConfirmation | undefined {
  const asking = (record.risks ?? []).filter((risk) => risk.confirm === 'type');
  if (asking.length === 0 || decisionTone(choice.decision) === 'reject') return undefined;
  const found = confirmTarget(record.subject, record.currentRequirementId.sourceIndex);
  const target = (found && typeable(found)) ?? typeable(fallbackTarget(record)) ?? APPROVE;
  return { target, risks: asking.map(({ name, warning }) => ({ name, warning })) };
}

/** Longest target asked for: past it, or across lines, a person copies rather than reads it. */
export const MAX_TARGET_LENGTH = 100;

/**
 * The target as typeableLength() cuts it; none when it holds a character the card shows as a marker
 * (`⟨U+202E⟩`, escape.ts): typed as shown it would not match, and no keyboard types the character
 * itself.
 */
function typeable(found: ConfirmTarget): ConfirmTarget | undefined {
  const target = typeableLength(found);
  return target && !hasHiddenCharacters(target.text) ? target : undefined;
}

/**
 * The target, or its end when it is too long to type or spans lines: its last line, cut to the
 * last MAX_TARGET_LENGTH characters from a separator on. The end is what names it (the domain of
 * a long host, the branch of a long ref), and a long target must not be the one that asks least:
 * the agent chooses how long it is.
 */
function typeableLength(found: ConfirmTarget): ConfirmTarget | undefined {
  // Spaces around it (`main ` as an operand, a no-break space) are not typed: what is typed is
  // trimmed, so a target kept with them could never be confirmed.
  const text = found.text.trim();
  if (text === '') return undefined;
  if (text.length <= MAX_TARGET_LENGTH && !/[\r\n]/.test(text))
    return text === found.text ? found : { ...found, text };
  const line = text
    .split(/[\r\n]+/)
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .at(-1);
  if (line === undefined) return undefined;
  let end = line.slice(-MAX_TARGET_LENGTH);
  // Half a surrogate pair (of an emoji, say) is no character: the end starts at a whole one.
  if (/^[\uDC00-\uDFFF]/.test(end)) end = end.slice(1);
  if (end.length < line.length) {
    const cut = end.search(/[./:\s-]/);
    if (cut >= 0 && cut < end.length - 1) end = end.slice(cut + 1).trim();
  }
  return end === text ? { ...found, text } : { text: end, source: found.source, end: true };
}

/** The last resort: a word that can always be typed. */
const APPROVE: ConfirmTarget = { text: 'approve', source: 'tool' };

/**
 * No target could be derived: the tool's name is asked for instead, never nothing. The agent names
 * its tool, so it is cut as any target is (typeable): one across lines could not be typed.
 */
function fallbackTarget(record: Pick<ApprovalRecord, 'tool' | 'subject'>): ConfirmTarget {
  const text = record.tool.trim() || record.subject.kind.trim() || APPROVE.text;
  return { text, source: 'tool' };
}
