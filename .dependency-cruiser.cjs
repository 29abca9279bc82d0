// Layers point one way. Read from the bottom up: each folder may import the ones listed for it
// and nothing above. docs/architecture.md draws the picture; `npm run lint` fails a new upward
// import. There is no exceptions list: a rule that needs one means the code is in the wrong place.
//
//   main → wiring → slack, replicas → relay → store, routing, cards → domain → msp (types) → util
//
const layer = (name, from, allowed, comment) => ({
  name,
  comment,
  severity: 'error',
  from: { path: from },
  to: { path: '^src/', pathNot: [`^src/(${allowed.join('|')})(/|\\.ts$)`] },
});
// Where a layer may name another's types but never run its code.
const typesOnly = (name, from, folder, comment) => ({
  name,
  comment,
  severity: 'error',
  from: { path: from },
  to: { path: `^src/${folder}/`, dependencyTypesNot: ['type-only'] },
});
// msp/ is the wire vocabulary: store/, routing/ and cards/ may name its types, never call it.
// domain/ builds the record's schema from the protocol's schemas, so it uses them as values.
const mspValues = (name, from) =>
  typesOnly(name, from, 'msp', 'only the types of msp/ (the wire vocabulary), never its code');

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'a circle of files reads as one module and cannot be changed one file at a time',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    layer('util', '^src/util/', ['util'], 'util/ knows nothing of Countersign'),
    layer('secrets', '^src/secrets/', ['secrets', 'util'], 'masking is a leaf'),
    layer('msp', '^src/msp/', ['msp', 'secrets', 'util'], 'the protocol client knows no Slack, Redis or card'),
    layer('pagerduty', '^src/pagerduty/', ['pagerduty', 'util'], 'the PagerDuty client is a leaf'),
    layer('domain', '^src/domain/', ['domain', 'msp', 'util'], 'domain types and rules every layer may use'),
    layer('store', '^src/store/', ['store', 'domain', 'msp', 'util'], 'Redis knows the domain, never who calls it'),
    mspValues('store-msp-types', '^src/store/'),
    layer('routing', '^src/routing/', ['routing', 'domain', 'msp', 'util'], 'routing reads requests'),
    mspValues('routing-msp-types', '^src/routing/'),
    layer(
      'cards',
      '^src/cards/',
      ['cards', 'domain', 'msp', 'util'],
      'cards turn data into Block Kit: no Redis, no Slack client, no relay',
    ),
    mspValues('cards-msp-types', '^src/cards/'),
    layer(
      'config',
      '^src/config/',
      ['config', 'domain', 'routing', 'secrets', 'store', 'util'],
      'settings are read before anything runs',
    ),
    typesOnly('config-store-types', '^src/config/', 'store', 'settings name what the store connects to, nothing more'),
    layer(
      'relay',
      '^src/relay/',
      ['relay', 'domain', 'store', 'routing', 'msp', 'secrets', 'pagerduty', 'util'],
      'the relay hands back outcomes; cards/ renders them and slack/ sends them',
    ),
    layer(
      'replicas',
      '^src/replicas/',
      ['replicas', 'relay', 'domain', 'store', 'msp', 'util'],
      'replicas coordinate hosts and decisions, and never talk to Slack',
    ),
    layer(
      'slack',
      '^src/slack/',
      ['slack', 'cards', 'relay', 'domain', 'store', 'routing', 'msp', 'pagerduty', 'config', 'util'],
      'Slack adapters and listeners; only wiring/ builds them',
    ),
    {
      name: 'only-main-wires',
      comment: 'wiring/ assembles the parts; nothing but main.ts imports it',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/main\\.ts$', '^src/wiring/'] },
      to: { path: '^src/(wiring/|main\\.ts$)' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
