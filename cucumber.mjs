// Conformance suite configuration (cucumber-js), the base of `vc-harness conformance` (src/cli/conformance.ts,
// docs/conformance.md), which runs it in-process with tsx loaded, replaces the console formatter below by
// one line per scenario (src/harness/progress-formatter.ts), moves the report files to its --reports folder,
// writes the JUnit file itself and annotates the HTML and JSON ones with the gate's view (expected failures,
// not applicable: src/harness/report-formats.ts), and adds reports/conformance.{json,md}. Its selection
// options (feature paths, --tags, --name) and run options (--retry, --fail-fast, --dry-run, --format) are
// cucumber's own. Plain cucumber-js keeps working on this file alone (cucumber's reports as they are):
//   node --import tsx node_modules/@cucumber/cucumber/bin/cucumber.js [--tags …] [--parallel N]
// Target selection (embedded service, child process or an external deployment): see src/harness/target.ts.

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
