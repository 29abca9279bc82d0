import type { CuaCardFacts } from '../../../msp/protocol.js';
import { MAX_CUA_CHARS, MAX_TEXT_CHARS } from './limits.js';
import { type FieldTaker, PartIntake, type PartReport } from './partIntake.js';

/** Computer-use facts: the window title and page host masked and cut, steps and data rows bounded. */
export function takeCuaFacts(facts: CuaCardFacts): { cuaCardFacts: CuaCardFacts; report: PartReport } {
  const part = new PartIntake(MAX_CUA_CHARS);
  const text: FieldTaker = (value) => part.text(value as string, MAX_TEXT_CHARS);
  const json: FieldTaker = (value) => part.json(value);
  const cuaCardFacts = part.shaped(facts, {
    page: (value) => part.shaped(value as Record<string, unknown>, { host: text, hostAscii: text }),
    windowTitle: text,
    steps: json,
    data: json,
  }) as CuaCardFacts;
  return { cuaCardFacts, report: part.report() };
}
