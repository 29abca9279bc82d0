// A shell subject as a host that splits commands sends it, for tests below the bot.

import type { ApprovalSubject } from '../../src/msp/protocol.js';

/** One stage per argv, the command their texts joined by " && ". */
export function shellSubject(...stages: string[][]): ApprovalSubject {
  return {
    kind: 'shell',
    command: stages.map((argv) => argv.join(' ')).join(' && '),
    stages: stages.map((argv, i) => ({
      requirementId: { approvalId: 'a', sourceIndex: i },
      position: i + 1,
      totalStages: stages.length,
      argv,
      argvComplete: true,
      resolution: { kind: 'unresolved' },
    })),
  };
}
