import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { z } from 'zod';
import { type ApprovalRecord, GrantRef, StoodInFor } from '../domain/record.js';
import type { DecisionOutcome, DecisionRequest } from '../relay/deciding/decider.js';
import { type DecisionStream, REPLY_TTL_MS, type StreamEntry } from '../store/decisionStream.js';
import type { RedisClient } from '../store/redisConnection.js';
import { byDeadline, LATE } from '../util/byDeadline.js';
import { BlockingReaders } from './blockingReaders.js';
import type { ReplicaSeal } from './replicaSeal.js';

// A decision taken at a replica that does not own the approval's host (a click that landed there,
// an escalation timeout it fired) is carried out by the owner: the asker appends it to the host's
// stream and waits for the outcome; the owner reads the stream and decides through its own Decider,
// with the commandId minted by the asker, so that carrying an entry out again (its first owner died
// before acknowledging it) is the same decision, never a second one.
//
// Nothing in the stream is taken on trust. Each entry carries a MAC over its exact body, and the
// outcome the owner writes back carries one over the host, the commandId and the outcome (keys
// derived from the replicas' shared secret, replicas/replicaSeal.ts): an entry without a valid
// one is dropped and logged, an outcome without one is not believed. And the owner decides
// through its own Decider with nothing the asker checked carried over: who may decide is checked
// again there, on the record the owner holds when it claims (DecisionRequest.warranted).

const Forwarded = z.object({
  approvalId: z.string(),
  hostId: z.string(),
  sourceIndex: z.number().int(),
  choiceId: z.string(),
  feedback: z.string().optional(),
  by: z.discriminatedUnion('via', [
    z.object({
      via: z.literal('click'),
      userId: z.string(),
      voters: z.array(z.string()).optional(),
      stoodInFor: StoodInFor.optional(),
      typed: z.string().optional(),
      onBehalfOf: z.string().optional(),
      askedAs: z.string().optional(),
      /**
       * A "don't ask again" press, which no stand-in may make (DecidedBy). Absent: a plain press,
       * or any press of an earlier release, held as before only to what its choice outlasts.
       */
      remember: z.literal(true).optional(),
    }),
    z.object({ via: z.literal('grant'), grant: GrantRef }),
    z.object({ via: z.literal('timeout') }),
  ]),
  commandId: z.string(),
  /** DecisionRequest.onChange: a click's decision is checked again in full by its asker. */
  onChange: z.enum(['recheck', 'return']).optional(),
  /** When the asker appended it (ms since the epoch): an entry past REPLY_TTL_MS is dropped. */
  at: z.number(),
  /** What the asker needs to answer the person should it stop waiting (see DecisionRequest.asker). */
  asker: z.record(z.string(), z.unknown()).optional(),
});
type Forwarded = z.infer<typeof Forwarded>;

/** What the owner writes back: the outcome (JSON, as a string) and its MAC. */
const Sealed = z.object({ o: z.string(), m: z.string() });

/** How the owner carries a forwarded decision out: its own Decider, for a request it may act on. */
export type DecideLocally = (request: DecisionRequest) => Promise<DecisionOutcome>;

/** Where the owner reads the record a forwarded decision is about (the ApprovalStore). */
export interface RecordReader {
  get(approvalId: string): Promise<ApprovalRecord | undefined>;
}

export interface DecisionForwardingOptions {
  stream: DecisionStream;
  /** Seals entries and outcomes, and checks those read back. */
  seal: ReplicaSeal;
  store: RecordReader;
  /** The owner's side decides through this (its Decider). */
  decide: DecideLocally;
  /**
   * A connection for blocking reads (ioredis's duplicate()): one per host served, and one per
   * asker waiting for an outcome (kept for the next).
   */
  readerConnection: () => RedisClient;
  replicaId: string;
  newCommandId: () => string;
  mayAct: (hostId: string) => boolean;
  logger: Logger;
  /** How long an asker waits for the owner before answering the person itself. */
  waitMs?: number;
  /** The asker stopped waiting: the owner answers the person (ClickHandler.answerLate). */
  onLateOutcome?: (asker: Record<string, unknown>, approvalId: string, outcome: DecisionOutcome) => void;
  /**
   * The asker stopped waiting: what it does on hearing the outcome (a grant's use counted) is
   * the owner's to do (GrantAnswerer.decidedUnheard). Awaited: stop() waits for it.
   */
  onUnheard?: (request: DecisionRequest, outcome: DecisionOutcome) => Promise<void>;
  /** How long an entry may stay pending before the owner serving the host claims it (default 5 s). */
  reclaimIdleMs?: number;
}

const DEFAULT_WAIT_MS = 20_000;
const BLOCK_MS = 2_000;
/**
 * An entry pending this long is claimed by the owner as it serves: a deposed owner frozen in its
 * blocking read (a long pause) is still handed entries by Redis after the new owner has claimed
 * what was pending, and would keep them until the host next changes hands. Well within an
 * asker's wait, so that the person still hears the outcome.
 */
const RECLAIM_IDLE_MS = 5_000;
/**
 * How long an asker blocks on its reply list at a time before it also looks at the reply key: an
 * owner of an earlier release stores the outcome there only, and a pushed outcome whose reply was
 * lost with a broken connection is there too.
 */
const REPLY_BLOCK_MS = 500;

export class DecisionForwarding {
  /** hostId → how to stop serving it. */
  private readonly serving = new Map<string, () => void>();
  private readonly active = new Set<Promise<unknown>>();
  /** The entries being carried out here (hostId, entry id): claiming one again is no reason to run it twice. */
  private readonly carrying = new Set<string>();
  /** The askers' blocking connections. */
  private readonly readers: BlockingReaders;

  constructor(private readonly options: DecisionForwardingOptions) {
    this.readers = new BlockingReaders(options.readerConnection);
  }

  /**
   * The asker's side: hands the decision to the host's owner and resolves with its outcome.
   * Recorded means appended to the stream: if that does not happen by `recordBy`, the entry is
   * withdrawn (unless the owner already took it) and the outcome is `notRecorded`.
   */
  async forward(request: DecisionRequest): Promise<DecisionOutcome> {
    const { stream, logger } = this.options;
    const { record } = request;
    const hostId = record.hostId;
    const commandId = request.commandId ?? this.options.newCommandId();
    const entry: Forwarded = {
      approvalId: record.approvalId,
      hostId,
      sourceIndex: request.sourceIndex,
      choiceId: request.choiceId,
      ...(request.feedback ? { feedback: request.feedback } : {}),
      by: request.by,
      commandId,
      ...(request.onChange ? { onChange: request.onChange } : {}),
      at: Date.now(),
      ...(request.asker ? { asker: request.asker } : {}),
    };
    const body = JSON.stringify(entry);
    const appending = stream.append(hostId, body, this.options.seal.mac('decision', body));
    const appended = await byDeadline(appending, request.recordBy);
    if (appended === LATE) {
      appending.catch(() => {});
      if (await stream.withdraw(hostId, commandId)) return { kind: 'notRecorded' };
    }
    logger.debug({ approvalId: record.approvalId, hostId, commandId }, 'decision handed to the host owner');
    const waitUntil = Date.now() + (this.options.waitMs ?? DEFAULT_WAIT_MS);
    let forged = false;
    const believed = (stored: string | undefined): DecisionOutcome | undefined => {
      const outcome = stored === undefined ? undefined : this.unsealed(hostId, commandId, stored);
      if (stored !== undefined && !outcome && !forged) {
        forged = true;
        logger.warn({ hostId, commandId }, 'outcome of a forwarded decision without a valid MAC; ignored');
      }
      return outcome;
    };
    const outcome = await this.awaitOutcome(hostId, commandId, waitUntil, believed);
    if (outcome) return outcome;
    return believed(await stream.giveUp(hostId, commandId)) ?? { kind: 'forwarded' };
  }

  /**
   * The outcome the owner sent for `commandId`, by `waitUntil`: blocked on its reply list, so
   * that it is heard as soon as the owner pushes it, with a look at the reply key between blocks.
   * With no blocking connection to be had (too many askers waiting at once, or one failed), the
   * reply key is polled.
   */
  private async awaitOutcome(
    hostId: string,
    commandId: string,
    waitUntil: number,
    believed: (stored: string | undefined) => DecisionOutcome | undefined,
  ): Promise<DecisionOutcome | undefined> {
    const { stream, logger } = this.options;
    let reader = this.readers.take();
    try {
      for (let pause = 5; Date.now() < waitUntil; pause = Math.min(pause * 2, 100)) {
        if (reader) {
          const blockMs = Math.min(waitUntil - Date.now(), REPLY_BLOCK_MS);
          const popping = stream.awaitOutcome(reader, hostId, commandId, blockMs);
          // Bounded here too: ioredis sends a read again after a reconnect, and would wait on.
          const pushed = await byDeadline(popping, Date.now() + blockMs + 1_000).catch(
            (err: unknown): typeof LATE => {
              logger.warn({ err, hostId, commandId }, 'could not wait on the reply list; polling');
              return LATE;
            },
          );
          if (pushed === LATE) {
            popping.catch(() => {});
            this.readers.giveBack(reader, true);
            reader = undefined;
          } else {
            const outcome = believed(pushed);
            if (outcome) return outcome;
          }
        }
        const outcome = believed(await stream.outcome(hostId, commandId));
        if (outcome) return outcome;
        if (!reader) await sleep(pause);
      }
      return undefined;
    } finally {
      if (reader) this.readers.giveBack(reader);
    }
  }

  /**
   * The owner's side: carries out what is pending for the host (left by an earlier owner too),
   * then what comes, until stopServing(). Call when this replica takes the host.
   */
  async serve(hostId: string): Promise<void> {
    if (this.serving.has(hostId)) return;
    const { stream, replicaId, logger } = this.options;
    const reader = this.options.readerConnection();
    let stopped = false;
    const stop = () => {
      stopped = true;
      reader.disconnect();
    };
    this.serving.set(hostId, stop);
    await stream.ensureGroup(hostId);
    const pending = await stream.claimPending(hostId, replicaId);
    if (pending.length > 0)
      logger.info({ hostId, entries: pending.length }, 'carrying out decisions left pending');
    for (const entry of pending) this.carry(hostId, entry);
    const reclaimIdleMs = this.options.reclaimIdleMs ?? RECLAIM_IDLE_MS;
    let reclaimAt = Date.now() + reclaimIdleMs;
    void (async () => {
      while (!stopped && this.options.mayAct(hostId)) {
        try {
          const entries = await stream.read(reader, hostId, replicaId, Math.min(BLOCK_MS, reclaimIdleMs));
          for (const entry of entries) this.carry(hostId, entry);
          if (Date.now() >= reclaimAt && !stopped) {
            reclaimAt = Date.now() + reclaimIdleMs;
            const left = await stream.claimPending(hostId, replicaId, reclaimIdleMs);
            for (const entry of left) this.carry(hostId, entry);
          }
        } catch (err) {
          if (stopped) return;
          logger.warn({ err, hostId }, 'could not read forwarded decisions; trying again');
          await sleep(500);
        }
      }
      // Ended by losing the host: serving it again (taking it back) starts afresh.
      if (this.serving.get(hostId) === stop) {
        this.serving.delete(hostId);
        stop();
      }
    })();
  }

  stopServing(hostId: string): void {
    this.serving.get(hostId)?.();
    this.serving.delete(hostId);
  }

  /** Stops serving every host; resolves once the entries being carried out have their outcome. */
  async stop(): Promise<void> {
    for (const hostId of [...this.serving.keys()]) this.stopServing(hostId);
    this.readers.stop();
    while (this.active.size > 0) await Promise.allSettled([...this.active]);
  }

  /** Carries an entry out, unless it is being carried out here already. */
  private carry(hostId: string, entry: StreamEntry): void {
    const key = `${hostId} ${entry.id}`;
    if (this.carrying.has(key)) return;
    this.carrying.add(key);
    this.track(this.carryOut(hostId, entry).finally(() => this.carrying.delete(key)));
  }

  private track(task: Promise<void>): void {
    const held = task.catch((err: unknown) => {
      this.options.logger.error({ err }, 'could not carry out a forwarded decision');
    });
    this.active.add(held);
    void held.finally(() => this.active.delete(held));
  }

  private async carryOut(hostId: string, entry: StreamEntry): Promise<void> {
    const { stream, store, seal, decide, logger } = this.options;
    // Never the body in the log: it is not known to come from a replica.
    if (!seal.verifies('decision', entry.body, entry.mac)) {
      logger.warn(
        { hostId, entryId: entry.id, mac: entry.mac === undefined ? 'missing' : 'wrong' },
        'forwarded decision without a valid MAC; dropped',
      );
      await stream.drop(hostId, entry.id);
      return;
    }
    const parsed = Forwarded.safeParse(safeJson(entry.body));
    if (!parsed.success || parsed.data.hostId !== hostId) {
      logger.warn({ hostId, entryId: entry.id }, 'malformed forwarded decision; dropped');
      await stream.drop(hostId, entry.id);
      return;
    }
    const forwarded = parsed.data;
    if (Date.now() - forwarded.at > REPLY_TTL_MS) {
      // Its reply key may be gone, so a replay of an entry carried out long ago looks new.
      logger.warn(
        { hostId, entryId: entry.id, commandId: forwarded.commandId },
        'forwarded decision too old; dropped',
      );
      await stream.drop(hostId, entry.id);
      return;
    }
    // The record is read in the same round trip as the take: what the take says decides whether
    // it is used, and the Decider's claim is made against it by compare-and-set anyway.
    const [state, record] = await Promise.all([
      stream.take(hostId, forwarded.commandId),
      store.get(forwarded.approvalId),
    ]);
    if (state === 'withdrawn' || typeof state === 'object') {
      // Withdrawn by its asker, or carried out by an earlier owner that died before removing it.
      await stream.drop(hostId, entry.id);
      return;
    }
    if (!this.options.mayAct(hostId)) return;
    const request: DecisionRequest | undefined = record && {
      record,
      sourceIndex: forwarded.sourceIndex,
      choiceId: forwarded.choiceId,
      ...(forwarded.feedback ? { feedback: forwarded.feedback } : {}),
      by: forwarded.by,
      commandId: forwarded.commandId,
      ...(forwarded.onChange ? { onChange: forwarded.onChange } : {}),
      // Should this replica find at its claim that the host is no longer its own, its Decider
      // hands the decision on again under the same commandId: whoever finishes it then tells the
      // person, should they have stopped waiting, and audits what they would have. Only one
      // finish per commandId finds the asker gone, so it is told, and audited, once.
      ...(forwarded.asker ? { asker: forwarded.asker } : {}),
    };
    const outcome: DecisionOutcome = request ? await decide(request) : { kind: 'gone' };
    // Lost the host on the way, or stopping before the Decider took it (it claimed nothing): the
    // entry stays pending for the next owner, who carries it out and tells the asker.
    if (!this.options.mayAct(hostId) || outcome.kind === 'stopping') return;
    const heard = await stream.finish(
      hostId,
      entry.id,
      forwarded.commandId,
      this.sealed(hostId, forwarded.commandId, JSON.stringify(outcome)),
    );
    if (heard) return;
    if (forwarded.asker) this.options.onLateOutcome?.(forwarded.asker, forwarded.approvalId, outcome);
    // Stopped waiting, the asker heard `forwarded` and did nothing that follows the outcome.
    if (request) await this.options.onUnheard?.(request, outcome);
  }

  /** The outcome as stored for the asker: bound to the host and the commandId it answers. */
  private sealed(hostId: string, commandId: string, outcome: string): string {
    const mac = this.options.seal.mac('outcome', outcomeText(hostId, commandId, outcome));
    return JSON.stringify({ o: outcome, m: mac });
  }

  /** The outcome read back, if the owner sealed it for this very decision; else undefined. */
  private unsealed(hostId: string, commandId: string, stored: string): DecisionOutcome | undefined {
    const parsed = Sealed.safeParse(safeJson(stored));
    if (!parsed.success) return undefined;
    const { o: outcome, m: mac } = parsed.data;
    if (!this.options.seal.verifies('outcome', outcomeText(hostId, commandId, outcome), mac))
      return undefined;
    return JSON.parse(outcome) as DecisionOutcome;
  }
}

/** What an outcome's MAC covers: the outcome, for this host and this commandId only. */
function outcomeText(hostId: string, commandId: string, outcome: string): string {
  return JSON.stringify([hostId, commandId, outcome]);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
