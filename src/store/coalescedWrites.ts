import type { Cluster, Redis } from 'ioredis';

/** Per coalesced connection: work waiting to ride along with its next command (rideNextWrite). */
const riders = new WeakMap<object, Array<() => void>>();

/**
 * Runs `issue` when this connection next sends a command of its own (not one of a pipeline or
 * MULTI: see coalesceWrites), so that what `issue` sends leaves in the same socket write and
 * costs no read event of its own at Redis: for bookkeeping that may wait (a card's sync mark
 * struck off). False when the connection does not coalesce (a Cluster):
 * the caller sends it on its own then, as it must anyway when nothing else is sent for a while.
 * `issue` must not throw: it runs inside another caller's command.
 */
export function rideNextWrite(redis: Redis | Cluster, issue: () => void): boolean {
  const waiting = riders.get(redis);
  if (!waiting) return false;
  waiting.push(issue);
  return true;
}

/**
 * How long bookkeeping waits for another write to ride before it goes on its own. In a busy
 * process something else is sent well within it; a quiet one sends it alone, late by this much.
 */
export const RIDE_WAIT_MS = 250;

/**
 * Issues `write` with whatever this connection sends next (rideNextWrite), or on its own after
 * `maxWaitMs` when nothing else is sent: for a write that may wait that long, so that it costs
 * no round trip of its own. Settles as the write does.
 */
export function rideOrSend<T>(
  redis: Redis | Cluster,
  write: () => Promise<T>,
  maxWaitMs = RIDE_WAIT_MS,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let issued = false;
    const issue = () => {
      if (issued) return;
      issued = true;
      clearTimeout(alone);
      // Run inside another caller's command (rideNextWrite): it must not throw there.
      try {
        write().then(resolve, reject);
      } catch (err) {
        reject(err);
      }
    };
    const alone = setTimeout(issue, maxWaitMs);
    if (!rideNextWrite(redis, issue)) issue();
  });
}

/**
 * Commands issued together leave in one socket write, in the order they were issued. A write to
 * a loopback socket costs a system call and a wake-up of Redis, more than the command itself: an
 * approval's create, its grant lookup and its open-set entry, or a card's place and its message
 * map, each go in one write.
 *
 * How long the socket stays corked follows Nagle's rule. With no reply outstanding, Redis is idle
 * and waiting helps nobody: the commands leave at the next microtask, as soon as the synchronous
 * stretch that issued them (a `Promise.all([...])`) is done, so a lone click's lookup leaves at
 * once. With replies outstanding, Redis is busy with earlier commands anyway: the socket stays
 * corked until this turn of the event loop has run its I/O callbacks (setImmediate), so that a
 * burst's creates, and the card places of every Slack answer read in the same turn, share one
 * write instead of one each (docs/performance.md, "sixth round").
 *
 * Unlike ioredis's auto-pipelining (see redisConnection.ts), no command waits behind another's
 * reply and none leaves out of order.
 */
export function coalesceWrites(redis: Redis): Redis {
  const send = redis.sendCommand.bind(redis);
  let corked = false;
  const waiting: Array<() => void> = [];
  riders.set(redis, waiting);
  redis.sendCommand = (command, stream) => {
    const socket = redis.stream;
    if (!corked && socket?.writable && redis.status === 'ready') {
      corked = true;
      socket.cork();
      const flush = () => {
        corked = false;
        socket.uncork();
      };
      if (redis.commandQueue.length > 0) setImmediate(flush);
      else queueMicrotask(flush);
    }
    const sent = send(command, stream);
    // After the command that brought them, in the same corked stretch: what they send (through
    // this function again, with nothing waiting by then) joins its write. Not after a command of
    // a pipeline or MULTI (`stream`): ioredis queues its reply now but writes the pipeline only
    // once its last command is in, so a rider sent now would reach Redis first and every reply
    // from there on would go to the wrong command (a notice's SET NX read MULTI's OK as won).
    if (!stream && waiting.length > 0) for (const issue of waiting.splice(0)) issue();
    return sent;
  };
  return redis;
}
