import type { Bindings, Logger } from 'pino';

/** A child logger built on first use: on a hot path, creating one costs more than the path's I/O. */
export function lazyChild(logger: Logger, bindings: Bindings): () => Logger {
  let child: Logger | undefined;
  return () => {
    if (!child) child = logger.child(bindings);
    return child;
  };
}
