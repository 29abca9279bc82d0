// dist/main.js with a throw that nothing catches, on SIGUSR2: what a bug in any callback of the
// bot would do. For test/e2e/shutdown.test.ts only.
process.once('SIGUSR2', () => {
  throw new Error('a stray throw');
});
await import('../../dist/main.js');
