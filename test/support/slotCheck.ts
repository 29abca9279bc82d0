// Makes a client refuse, as Redis Cluster would, any script, command or pipeline whose keys are
// not all of one hash tag. Stricter than Cluster itself: ioredis only refuses a pipeline whose
// keys sit on different nodes, and two slots may share a node; Redis refuses a script's keys
// in two slots, not two tags that happen to hash alike. On one Redis nothing refuses them at all.
// The batches auto-pipelining makes of unrelated commands are not the store's round trips: only
// each of their commands is checked.

import type { RedisClient } from '../../src/store/redisConnection.js';

/** What Redis Cluster hashes: the first non-empty `{…}` of the key, else the whole key. */
export function hashed(key: string): string {
  const open = key.indexOf('{');
  if (open < 0) return key;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

interface QueuedCommand {
  name: string;
  getKeys(): Array<string | Buffer>;
  reject(err: Error): void;
  promise: Promise<unknown>;
}

function spread(commands: QueuedCommand[]): string | undefined {
  const byTag = new Map<string, string>();
  for (const command of commands) {
    for (const key of command.getKeys()) byTag.set(hashed(String(key)), `${command.name} ${String(key)}`);
  }
  return byTag.size > 1 ? [...byTag.values()].join(', ') : undefined;
}

/** ioredis marks the pipelines it batches commands in with symbols of its own. */
function autoPipelined(pipeline: object): boolean {
  return Object.getOwnPropertySymbols(pipeline).some((s) => s.description === 'callbacks');
}

/** Returns the same client, patched: a violation rejects with an error naming the keys. */
export function refuseCrossSlot<T extends RedisClient>(client: T): T {
  const patched = client as unknown as Record<string, (...args: unknown[]) => unknown>;
  const sendCommand = patched.sendCommand!.bind(client);
  patched.sendCommand = (command: unknown, ...rest: unknown[]) => {
    const cmd = command as QueuedCommand;
    const keys = spread([cmd]);
    if (keys) {
      // As Redis words it, so that what the bot does on such a refusal is what it does here.
      cmd.reject(
        new Error(`CROSSSLOT Keys in request don't hash to the same slot (cross-slot command: ${keys})`),
      );
      return cmd.promise;
    }
    return sendCommand(command, ...rest);
  };
  for (const method of ['pipeline', 'multi'] as const) {
    const original = patched[method]!.bind(client);
    patched[method] = (...args: unknown[]) => {
      const pipeline = original(...args) as { _queue: QueuedCommand[]; exec: (...a: unknown[]) => unknown };
      const exec = pipeline.exec.bind(pipeline);
      pipeline.exec = (...a: unknown[]) => {
        const keys = autoPipelined(pipeline) ? undefined : spread(pipeline._queue);
        if (keys) return Promise.reject(new Error(`cross-slot ${method}: ${keys}`));
        return exec(...a);
      };
      return pipeline;
    };
  }
  return client;
}
