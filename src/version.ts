import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The package version, sent to hosts as clientInfo.version. */
export const VERSION: string = (require('../package.json') as { version: string }).version;
