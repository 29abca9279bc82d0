import type { Redis } from 'ioredis';

/**
 * Commands issued in one turn of the event loop leave in one socket write, in the order they were
 * issued. A write to a loopback socket costs a system call and a wake-up of Redis, more than the
 * command itself: an approval's create and its open-set entry, or a card's place and its message
 * map, are each written together. Unlike ioredis's auto-pipelining (see redisConnection.ts), no
 * command waits behind another's reply and none leaves out of order: the socket is only corked
 * until the current turn's synchronous work and its process.nextTick callbacks are done.
 */
export function coalesceWrites(redis: Redis): Redis {
  const send = redis.sendCommand.bind(redis);
  let corked = false;
  redis.sendCommand = (command, stream) => {
    const socket = redis.stream;
    if (!corked && socket?.writable && redis.status === 'ready') {
      corked = true;
      socket.cork();
      process.nextTick(() => {
        corked = false;
        socket.uncork();
      });
    }
    return send(command, stream);
  };
  return redis;
}
