import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { ApprovalStore } from '../store/approvalStore.js';
import type { DecisionStream, StreamEntry } from '../store/decisionStream.js';
import { GrantRef } from '../store/record.js';
import type { RedisClient } from '../store/redisConnection.js';
import { byDeadline, LATE } from '../util/byDeadline.js';
import type { DecisionOutcome, DecisionRequest } from './decider.js';

// A decision taken at a replica that does not own the approval's host (a click that landed there,
// an escalation timeout it fired) is carried out by the owner: the asker appends it to the host's
// stream and waits for the outcome; the owner reads the stream and decides through its own Decider,
// with the commandId minted by the asker, so that carrying an entry out again (its first owner died
// before acknowledging it) is the same decision, never a second one.

const Forwarded = z.object({
  approvalId: z.string(),
  hostId: z.string(),
  sourceIndex: z.number().int(),
  choiceId: z.string(),
  feedback: z.string().optional(),
  by: z.discriminatedUnion('via', [
    z.object({ via: z.literal('click'), userId: z.string(), voters: z.array(z.string()).optional() }),
    z.object({ via: z.literal('grant'), grant: GrantRef }),
    z.object({ via: z.literal('timeout') }),
  ]),
  commandId: z.string(),
  /** What the asker needs to answer the person should it stop waiting (see DecisionRequest.asker). */
  asker: z.record(z.string(), z.unknown()).optional(),
});
type Forwarded = z.infer<typeof Forwarded>;

/** How the owner carries a forwarded decision out: its own Decider, for a request it may act on. */
export type DecideLocally = (request: DecisionRequest) => Promise<DecisionOutcome>;

export interface DecisionForwardingOptions {
  stream: DecisionStream;
  store: ApprovalStore;
  /** A connection for blocking reads, one per host served (ioredis's duplicate()). */
  readerConnection: () => RedisClient;
  replicaId: string;
  newCommandId: () => string;
  mayAct: (hostId: string) => boolean;
  logger: Logger;
  /** How long an asker waits for the owner before answering the person itself. */
  waitMs?: number;
  /** The asker stopped waiting: the owner answers the person (ClickHandler.answerLate). */
  onLateOutcome?: (asker: Record<string, unknown>, approvalId: string, outcome: DecisionOutcome) => void;
}

const DEFAULT_WAIT_MS = 20_000;
const BLOCK_MS = 2_000;

export class DecisionForwarding {
  private decideLocally: DecideLocally | undefined;
  /** hostId → how to stop serving it. */
  private readonly serving = new Map<string, () => void>();
  private readonly active = new Set<Promise<unknown>>();

  constructor(private readonly options: DecisionForwardingOptions) {}

  /** The owner's side decides through this (the Decider, once it is built). */
  decideWith(decide: DecideLocally): void {
    this.decideLocally = decide;
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
      ...(request.asker ? { asker: request.asker } : {}),
    };
    const appending = stream.append(hostId, JSON.stringify(entry));
    const appended = await byDeadline(appending, request.recordBy);
    if (appended === LATE) {
      appending.catch(() => {});
      if (await stream.withdraw(hostId, commandId)) return { kind: 'notRecorded' };
    }
    logger.debug({ approvalId: record.approvalId, hostId, commandId }, 'decision handed to the host owner');
    const waitUntil = Date.now() + (this.options.waitMs ?? DEFAULT_WAIT_MS);
    for (let pause = 5; Date.now() < waitUntil; pause = Math.min(pause * 2, 100)) {
      const outcome = await stream.outcome(hostId, commandId);
      if (outcome) return JSON.parse(outcome) as DecisionOutcome;
      await sleep(pause);
    }
    const last = await stream.giveUp(hostId, commandId);
    return last ? (JSON.parse(last) as DecisionOutcome) : { kind: 'forwarded' };
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
    for (const entry of pending) this.track(this.carryOut(hostId, entry));
    void (async () => {
      while (!stopped && this.options.mayAct(hostId)) {
        try {
          const entries = await stream.read(reader, hostId, replicaId, BLOCK_MS);
          for (const entry of entries) this.track(this.carryOut(hostId, entry));
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
    while (this.active.size > 0) await Promise.allSettled([...this.active]);
  }

  private track(task: Promise<void>): void {
    const held = task.catch((err: unknown) => {
      this.options.logger.error({ err }, 'could not carry out a forwarded decision');
    });
    this.active.add(held);
    void held.finally(() => this.active.delete(held));
  }

  private async carryOut(hostId: string, entry: StreamEntry): Promise<void> {
    const { stream, store, logger } = this.options;
    const parsed = Forwarded.safeParse(safeJson(entry.body));
    if (!parsed.success || parsed.data.hostId !== hostId) {
      logger.warn({ hostId, entryId: entry.id }, 'malformed forwarded decision; dropped');
      await stream.drop(hostId, entry.id);
      return;
    }
    const forwarded = parsed.data;
    const state = await stream.take(hostId, forwarded.commandId);
    if (state === 'withdrawn' || typeof state === 'object') {
      // Withdrawn by its asker, or carried out by an earlier owner that died before removing it.
      await stream.drop(hostId, entry.id);
      return;
    }
    if (!this.options.mayAct(hostId) || !this.decideLocally) return;
    const record = await store.get(forwarded.approvalId);
    const outcome: DecisionOutcome = record
      ? await this.decideLocally({
          record,
          sourceIndex: forwarded.sourceIndex,
          choiceId: forwarded.choiceId,
          ...(forwarded.feedback ? { feedback: forwarded.feedback } : {}),
          by: forwarded.by,
          commandId: forwarded.commandId,
        })
      : { kind: 'gone' };
    // Lost the host on the way: the entry stays pending for the next owner, who carries it out.
    if (!this.options.mayAct(hostId)) return;
    const heard = await stream.finish(hostId, entry.id, forwarded.commandId, JSON.stringify(outcome));
    if (!heard && forwarded.asker)
      this.options.onLateOutcome?.(forwarded.asker, forwarded.approvalId, outcome);
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
