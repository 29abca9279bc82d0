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
 * adds what the person entered. Metadata without `askedAs` gives a click that names no question.
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
    // The question the modal showed: its submit decides only while that is still asked. Every
    // modal the bot opens names it; metadata that does not cannot say what was shown, and is
    // refused as a press of a button that names none is (ClickHandler), never counted on the
    // question as it stands now.
    ...(askedAs ? { askedAs } : { namesNoQuestion: true as const }),
    userId,
    receivedAt,
    from: 'modal',
  };
}

/**
 * How a modal's submit that is taken (not refused in the modal itself) is answered. A modal
 * pushed on top of the full view (views.push; Slack names the view under it) closes that view
 * too: Slack would otherwise go back to it, every choice button still live and each press there
 * refused in an ephemeral hidden behind it. The card shows what came of the submit, and so does
 * the ephemeral that tells of a refusal. A modal opened on its own just closes.
 */
export function takenSubmitAnswer(view: {
  previous_view_id?: string | null;
}): { response_action: 'clear' } | undefined {
  return view.previous_view_id ? { response_action: 'clear' } : undefined;
}
