// The package's main entry: `import { Wallet } from 'vc-harness'` is the simulated wallet (src/wallet/index.ts,
// its own public entry, also at 'vc-harness/wallet'). The relying-party client ('vc-harness/client') and the
// runners ('vc-harness/conformance', 'vc-harness/wallet-test') have subpaths of their own, so importing the
// wallet loads neither the service nor cucumber. Built to dist/ by tsconfig.build.json (README, "Use as a library").
export * from './wallet/index.ts'
