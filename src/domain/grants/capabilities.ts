import type { ApprovalSubject, CuaCardFacts, RequirementRef } from '../../msp/protocol.js';
import { argvText } from '../argvText.js';
import type { Intake } from '../record.js';
import { syntaxOutsideWords } from './commandText.js';
import { earlierStageMoves } from './earlierStages.js';

// What a request asks to do, as canonical capability strings (docs/grants.md), and whether a
// remembered grant may ever answer it. Whatever is not fully understood is not grantable: a
// grant must never cover something nobody saw.

/** The parts of an approval that decide what it asks for. */
export interface CapabilityRequest {
  tool: string;
  subject: ApprovalSubject;
  currentRequirementId: RequirementRef;
  protectedWrite: boolean;
  cuaCardFacts?: CuaCardFacts;
  intake?: Intake;
}

/**
 * The capabilities the current stage requires, canonical (sorted, de-duplicated). `notGrantable`
 * says why no grant may answer it; `capabilities` is then still what could be understood, for
 * showing, and may be empty.
 */
export interface StageCapabilities {
  capabilities: string[];
  notGrantable?: string;
}

export function stageCapabilities(request: CapabilityRequest): StageCapabilities {
  return withRequestChecks(request, derivedOnce(request).scoped);
}

/**
 * What the current stage asks whatever directory it runs in: a shell stage's `exec:` alone, with
 * no `in:` and none of the workspace's rules. Batch triage groups alike requests by it (`npm test`
 * in eight worktrees, docs/slack.md): a person decides each of them, and no grant is made of it.
 */
export function alikeCapabilities(request: CapabilityRequest): StageCapabilities {
  const { alike, outside } = derivedOnce(request);
  if ('notGrantable' in alike) return { capabilities: [], notGrantable: alike.notGrantable };
  // A redirection is the command's wherever it runs: a batch must not hide it among plain ones.
  if (outside) return { capabilities: [], notGrantable: outside };
  return withRequestChecks(request, { capabilities: alike.capabilities });
}

/** What is checked beside the subject, on every call: it is not part of the subject object. */
function withRequestChecks(request: CapabilityRequest, derived: StageCapabilities): StageCapabilities {
  if (derived.notGrantable) return derived;
  const why = whyNotGrantable(request);
  return why ? { capabilities: derived.capabilities, notGrantable: why } : derived;
}

/** A subject's last working-out, by the stage and tool it was worked out for. */
interface Derivation {
  tool: string;
  sourceIndex: number;
  alike: Derived;
  /** Why a shell command's text does more than its stages' words (commandText.ts), if it does. */
  outside?: string;
  scoped: StageCapabilities;
}

const derivations = new WeakMap<ApprovalSubject, Derivation>();

/**
 * The subject's capabilities (canonical), worked out once per subject object and stage: a record
 * is copied, never changed, so its subject object stands for the same words as long as it lives,
 * and one approval asks this of it at intake, of grants and of batch triage (docs/performance.md,
 * "Batch triage"). The result is shared: callers must not change it.
 */
function derivedOnce(request: CapabilityRequest): Derivation {
  const { subject, tool } = request;
  const { sourceIndex } = request.currentRequirementId;
  const known = derivations.get(subject);
  if (known && known.tool === tool && known.sourceIndex === sourceIndex) return known;
  const raw = subjectCapabilities(request);
  const alike = 'notGrantable' in raw ? raw : { capabilities: canonicalCapabilities(raw.capabilities) };
  const outside = subject.kind === 'shell' ? syntaxOutsideWords(subject) : undefined;
  const derivation = {
    tool,
    sourceIndex,
    alike,
    outside,
    scoped: inWorkspace(subject, request.currentRequirementId, alike, outside),
  };
  derivations.set(subject, derivation);
  return derivation;
}

/** Sorted and de-duplicated: the one form a covered set is stored and compared in. */
export function canonicalCapabilities(capabilities: readonly string[]): string[] {
  return [...new Set(capabilities)].sort();
}

/** Exact membership only: a prefix, a parent directory or a wildcard never covers anything. */
export function covers(covered: readonly string[], required: readonly string[]): boolean {
  if (required.length === 0) return false;
  const set = new Set(covered);
  return required.every((capability) => set.has(capability));
}

/**
 * Why a path names no one file by its spelling alone, or undefined when it is canonical: absolute,
 * no NUL, no `.` or `..` segment, no empty one (`//`, a trailing `/`), not through `/proc` or
 * `/dev/fd`. Nothing is resolved by hand:
 * `..` after a symlink leads to the parent of the link's target, which only the filesystem knows
 * (`/srv/repo/link/../notes.txt` may be `/elsewhere/notes.txt`), and a trailing slash makes the
 * kernel follow a last symlink and want a directory. A grant is made from, and answers, the path
 * exactly as the agent sent it, so a line in the channel names what was written.
 */
function pathFault(path: string | undefined): string | undefined {
  if (!path?.startsWith('/') || path.includes('\0')) return 'that is not absolute';
  if (path === '/') return undefined;
  const segments = path.slice(1).split('/');
  if (segments.some((s) => s === '.' || s === '..')) return 'with a . or .. segment';
  if (segments.includes('')) return 'with // or a trailing /';
  // `/proc/self/root/srv/prod` is `/srv/prod` by another name, and `/proc/1/cwd` or `/dev/fd/3`
  // names whatever a process holds: a grant on such a spelling would answer for another path.
  if (/^\/(?:proc|dev\/fd)(?:\/|$)/.test(path)) return 'through /proc or /dev/fd';
  return undefined;
}

/** `<kind>:<path>` for a canonical path; otherwise why not, naming the path as `noun`. */
function pathCapability(kind: string, noun: string, path: string | undefined): Derived {
  const fault = pathFault(path);
  return fault ? { notGrantable: `a ${noun} ${fault}` } : { capabilities: [`${kind}:${path}`] };
}

function whyNotGrantable(request: CapabilityRequest): string | undefined {
  if (request.protectedWrite) return 'a protected write';
  if ((request.cuaCardFacts?.data?.length ?? 0) > 0) return 'computer-use data';
  // What was stored is not what the agent sent: a grant on it would cover an unseen request.
  if ((request.intake?.maskedSecrets ?? 0) > 0) return 'secrets were masked';
  if (request.intake?.truncated) return 'the request was cut';
  // Dropped for its shape: a field nobody saw may have held what no grant may answer (data above).
  if (request.intake && Object.values(request.intake.parts).some((part) => part.unreadable)) {
    return 'part of the request could not be read';
  }
  return undefined;
}

type Derived = { capabilities: string[] } | { notGrantable: string };

function subjectCapabilities({ subject, tool, currentRequirementId }: CapabilityRequest): Derived {
  switch (subject.kind) {
    case 'shell':
      return shellStage(subject, currentRequirementId);
    case 'fileAccess': {
      if (subject.access !== 'read' && subject.access !== 'write') {
        return { notGrantable: `an unknown file access (${String(subject.access)})` };
      }
      return pathCapability(`file-${subject.access}`, 'path', subject.path);
    }
    case 'network':
      return network(subject);
    case 'process':
      return subject.target
        ? { capabilities: [`process:${subject.target}`] }
        : { notGrantable: 'no process target' };
    case 'unixSocket':
      return pathCapability('unix-socket', 'socket path', subject.path);
    case 'tool': {
      const name = subject.toolName ?? tool;
      return name ? { capabilities: [`tool:${name}`] } : { notGrantable: 'no tool name' };
    }
    default:
      return { notGrantable: `an unknown subject kind (${subject.kind})` };
  }
}

/** One stage is decided at a time: the capability is that of the stage the host asks about now. */
function shellStage(subject: ApprovalSubject, current: RequirementRef): Derived {
  const stage = subject.stages?.find((s) => s.requirementId.sourceIndex === current.sourceIndex);
  if (!stage) return { notGrantable: 'no stage for the current requirement' };
  // argvComplete false: the words are a fragment the host could not parse (a substitution, …).
  if (stage.argvComplete !== true) return { notGrantable: 'a command that could not be parsed' };
  if (stage.argv.length === 0 || stage.argv[0] === '') return { notGrantable: 'an empty command' };
  return { capabilities: [`exec:${argvText(stage.argv)}`] };
}

/**
 * What a grant must cover of a shell stage: its words, and the directory they run in (`in:<root>`,
 * the root canonical as a file path is). `make install`, `./deploy.sh` or `git push` do what the
 * directory holds: a grant made in one workspace never answers the same words in another. The root
 * is the subject's own (the host's word for where this command runs), never the session's.
 */
function inWorkspace(
  subject: ApprovalSubject,
  current: RequirementRef,
  alike: Derived,
  outside: string | undefined,
): StageCapabilities {
  if ('notGrantable' in alike) return { capabilities: [], notGrantable: alike.notGrantable };
  if (subject.kind !== 'shell') return alike;
  const root = subject.workspaceRoot;
  const fault = pathFault(root);
  if (fault) {
    const why = root === undefined ? 'a command with no workspace root' : `a workspace root ${fault}`;
    return { capabilities: alike.capabilities, notGrantable: why };
  }
  const capabilities = canonicalCapabilities([...alike.capabilities, `in:${root}`]);
  // The words are understood, and shown; what the grant would not encode keeps it from being made.
  const notGrantable = outside ?? earlierStageMoves(subject.stages ?? [], current.sourceIndex);
  return notGrantable ? { capabilities, notGrantable } : { capabilities };
}

function network(subject: ApprovalSubject): Derived {
  const protocol = subject.protocol?.toLowerCase();
  const host = subject.host?.toLowerCase().replace(/\.$/, '');
  const port = subject.port;
  if (!protocol || !/^[a-z][a-z0-9+.-]*$/.test(protocol)) return { notGrantable: 'no protocol' };
  if (!host || /[\s/@]/.test(host)) return { notGrantable: 'no host' };
  if (port === undefined || !Number.isInteger(port) || port < 0 || port > 65_535)
    return { notGrantable: 'no port' };
  const shownHost = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return { capabilities: [`net-connect:${protocol}://${shownHost}:${port}`] };
}
