import { z } from 'zod';

/** One labelled piece of a request shown whole in the "View full" modal: the command, the arguments… */
export const FullPart = z.object({ label: z.string(), text: z.string() });
export type FullPart = z.infer<typeof FullPart>;

/**
 * A part of a request as the agent sent it, masked, kept beside the record when intake had to cut
 * it (relay/intake/takeFullText.ts). Bounded by what a modal can show; `omitted` counts the
 * characters past that bound.
 */
export const FullText = z.object({ parts: z.array(FullPart), omitted: z.number().int() });
export type FullText = z.infer<typeof FullText>;

/** Fields of the approval's hash (keys.approval) that hold the full text: one per record field. */
export const FULL_TEXT_FIELDS = { subject: 'xs', rawArgs: 'xa' } as const;
export type FullTextOf = Partial<Record<keyof typeof FULL_TEXT_FIELDS, FullText>>;
