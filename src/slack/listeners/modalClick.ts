import { z } from 'zod';
import type { Click } from '../../relay/deciding/clickHandler.js';

/** Only what finds the card again: the approval, its question and its target are read from Redis. */
const ModalMetadata = z.object({
  channel: z.string(),
  ts: z.string(),
  sourceIndex: z.number().int(),
  choiceId: z.string(),
  approvalId: z.string().optional(),
  askedAs: z.string().optional(),
});

/**
 * The click a modal's submission stands for (the reject reason, the typed confirmation), read from
 * the private_metadata the modal was opened with; undefined when that does not parse. The caller
 * adds what the person entered.
 */
export function clickOfModal(privateMetadata: string, userId: string, receivedAt: number): Click | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(privateMetadata);
  } catch {
    return undefined;
  }
  const metadata = ModalMetadata.safeParse(parsed);
  if (!metadata.success) return undefined;
  const { approvalId, askedAs, ...where } = metadata.data;
  return {
    ...where,
    ...(approvalId ? { approvalHint: approvalId } : {}),
    ...(askedAs ? { askedAs } : {}),
    userId,
    receivedAt,
    from: 'modal',
  };
}
