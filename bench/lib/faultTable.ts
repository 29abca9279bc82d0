import type { Figures } from './audit.js';
import { FAULT_NAMES, type FaultName } from './faults.js';

// The table `npm run chaos` prints (Markdown, so docs/reliability.md can quote it).

export const COLUMNS: ReadonlyArray<keyof Figures> = [
  'approvals',
  'cards',
  'lost',
  'duplicatedCards',
  'duplicatedDecisions',
  'stuck',
  'mislabelled',
];

export function faultTable(figures: Partial<Record<FaultName, Figures>>): string {
  const lines = [`| fault | ${COLUMNS.join(' | ')} |`, `|---|${COLUMNS.map(() => '---:').join('|')}|`];
  for (const name of FAULT_NAMES) {
    const f = figures[name];
    if (f) lines.push(`| ${name} | ${COLUMNS.map((c) => String(f[c])).join(' | ')} |`);
  }
  return `${lines.join('\n')}\n`;
}
