import { createHash } from 'node:crypto';
import { stringify } from 'safe-stable-stringify';
import type { ApprovalRecord } from './record.js';

/**
 * A short digest of the question an approval asks now: its subject, the stage asked about, the
 * choices and the risk rules it matched. A modal that asks for something typed carries the digest
 * of what it showed, so a submit after the host re-asked (another command with the same target
 * word, say) decides nothing it did not show.
 */
export function questionDigest(
  record: Pick<ApprovalRecord, 'subject' | 'currentRequirementId' | 'availableChoices' | 'risks'>,
): string {
  const asked = [record.subject, record.currentRequirementId, record.availableChoices, record.risks ?? []];
  // Keys sorted: the replica that opened the modal and the one that takes its submit may hold the
  // same record with its keys in another order (built from the host's frame, or read from Redis).
  return createHash('sha256')
    .update(stringify(asked) ?? '')
    .digest('base64url')
    .slice(0, 22);
}
