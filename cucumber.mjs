// Conformance suite configuration (cucumber-js). TypeScript steps load through tsx, which the npm
// script registers: node --import tsx node_modules/@cucumber/cucumber/bin/cucumber.js.
// Target selection (embedded service or an external deployment): see src/harness/target.ts.

// A progress bar on a terminal; in CI logs, where it cannot redraw, the failures and a summary.
const console = process.stdout.isTTY ? 'progress-bar' : 'summary'

export default {
  paths: ['features/**/*.feature'],
  import: ['steps/**/*.ts'],
  format: [
    console,
    'html:reports/cucumber.html',
    'json:reports/cucumber.json',
    'junit:reports/cucumber.xml',
    'message:reports/cucumber.ndjson',
  ],
  formatOptions: { snippetInterface: 'async-await' },
  // Undefined and pending steps fail the run.
  strict: true,
}
