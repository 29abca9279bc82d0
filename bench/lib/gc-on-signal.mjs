// Preloaded into the bot by bench/ only (node --expose-gc --import): SIGUSR2 runs a full garbage
// collection, so that memory is compared between two states rather than two moments.
process.on('SIGUSR2', () => {
  globalThis.gc?.({ type: 'major', execution: 'sync' });
});
