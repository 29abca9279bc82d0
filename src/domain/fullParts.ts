import type { ApprovalSubject } from '../msp/protocol.js';
import { toJson } from '../util/toJson.js';
import { argvText } from './argvText.js';
import type { FullPart } from './fullText.js';
import { asciiHost, networkAddress } from './networkAddress.js';

// What the "View full" modal shows of a request, as labelled texts. The same functions read a
// record (whose text intake may have cut) and the masked full text kept when it did, so both
// read alike.

/** The subject's texts: the command and its stages, a path, a network target… */
export function subjectParts(subject: ApprovalSubject): FullPart[] {
  const parts: FullPart[] = [];
  const add = (label: string, text: string | undefined) => {
    if (text !== undefined) parts.push({ label, text });
  };
  switch (subject.kind) {
    case 'shell': {
      add('Command', subject.command);
      const stages = subject.stages ?? [];
      if (stages.length > 0) {
        // One line a stage: its words quoted as the card shows them, so a word's own line break
        // cannot draw a stage line of its own.
        add('Stages', stages.map((s) => `${s.position}/${s.totalStages}  ${argvText(s.argv)}`).join('\n'));
      }
      add('Workspace', subject.workspaceRoot);
      break;
    }
    case 'fileAccess':
      add('File', subject.path);
      break;
    case 'network':
      add('Connects to', networkAddress(subject));
      add('Host in ASCII', asciiHost(subject));
      break;
    case 'process':
      add('Process', subject.target);
      break;
    case 'unixSocket':
      add('Unix socket', subject.path);
      add('Target', subject.target);
      break;
    case 'tool':
      add('Tool call', subject.toolName);
      break;
    case 'computerUseTakeover':
      if (subject.holder !== undefined) add('Current lock holder', toJson(subject.holder, 2));
      break;
    default:
      add('Subject as sent', toJson(subject, 2));
      break;
  }
  return parts;
}

/** The arguments, pretty-printed as the card shows them (toJson.prettyArgs); none when empty. */
export function argsParts(args: string): FullPart[] {
  return args === '' ? [] : [{ label: 'Arguments', text: args }];
}
