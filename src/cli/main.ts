const USAGE = `Usage: vc-harness <command> [options]

Commands:
  serve        run the reference service (see: vc-harness serve --help)
  wallet       the simulated wallet: open a deep link, receive a credential offer, present to a verification request, list held credentials (see: vc-harness wallet --help)
  wallet-test  test a wallet's safety: the service misbehaves on purpose per case, the wallet must refuse (see: vc-harness wallet-test --help)
  issuer-test  grade any OpenID4VCI issuer: the harness's wallet, correct or misbehaving, per case (see: vc-harness issuer-test --help)
  verifier-test
               grade any OpenID4VP verifier: the harness's wallet, correct or misbehaving, per case (see: vc-harness verifier-test --help)
  dev-cert     make a development CA and an HTTPS certificate for a DNS name, for phones (see: vc-harness dev-cert --help)
  conformance  run the conformance suite and write the reports, or summarize existing runs (see: vc-harness conformance --help)
  bench        complete flows per second with concurrent wallets, against the service and its baselines (see: vc-harness bench --help)
  help         show this text; help <command> shows that command's

Options:
  -v, --version  print the version of vc-harness`

// Nothing of the service is imported here (a config error is recognised by name): --help and usage errors stay fast.
// Each command is imported lazily: the wallet, cucumber and browser stacks are slow to load.
// A command may return its exit code (conformance: 1 when a requirement fails); nothing means 0.
const commands: Record<string, (argv: string[]) => Promise<number | undefined>> = {
  serve: async (argv) => (await import('./serve.ts')).serve(argv),
  wallet: async (argv) => (await import('./wallet.ts')).wallet(argv).then(() => undefined),
  'wallet-test': async (argv) => (await import('./wallet-test.ts')).walletTest(argv),
  'issuer-test': async (argv) => (await import('./server-test.ts')).issuerTest(argv),
  'verifier-test': async (argv) => (await import('./server-test.ts')).verifierTest(argv),
  'dev-cert': async (argv) => (await import('./dev-cert.ts')).devCert(argv),
  conformance: async (argv) => (await import('./conformance.ts')).conformance(argv),
  bench: async (argv) => (await import('../../bench/run.ts')).bench(argv),
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv
  if (name === '--version' || name === '-v') {
    // read lazily: --help and the other commands do not need it
    console.log((await import('../service/util/version.ts')).PACKAGE_VERSION)
    return 0
  }
  // `help <command>` is `<command> --help`.
  if (name === 'help' && rest[0] !== undefined && commands[rest[0]]) return main([rest[0], '--help'])
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    console.log(USAGE)
    return name === undefined ? 2 : 0
  }
  const command = commands[name]
  if (!command) {
    // The error first, in one line, with the likely command; the list of commands after it.
    const { didYouMean } = await import('./suggest.ts')
    console.error(
      `vc-harness: unknown command "${name}".${didYouMean(name, Object.keys(commands))}\n\n${USAGE}`,
    )
    return 2
  }
  try {
    return (await command(rest)) ?? 0
  } catch (error) {
    const code = (error as { code?: string }).code
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      console.error(`vc-harness ${name}: ${await unknownOption(error as Error, command)}`)
      return 2
    }
    // A UserError (src/cli/serve.ts) carries its exit code: 2 for usage and configuration, 1 otherwise.
    if (
      (error as Error).name === 'ConfigError' ||
      (error as Error).name === 'UserError' ||
      code?.startsWith('ERR_PARSE_ARGS')
    ) {
      console.error(`vc-harness ${name}: ${(error as Error).message}`)
      return (error as { exitCode?: number }).exitCode ?? 2
    }
    console.error(`vc-harness ${name}: ${(error as Error).stack ?? error}`)
    return 1
  }
}

/**
 * Node's message for an unknown option ("Unknown option '--paralel'. To specify a positional argument …")
 * as one line naming the option, the likely one from the command's own help, and where the options are.
 */
async function unknownOption(error: Error, command: (argv: string[]) => Promise<unknown>): Promise<string> {
  const option = /'([^']+)'/.exec(error.message)?.[1] ?? 'an option'
  // The command's help text names its options: printed to nowhere, read here.
  const lines: string[] = []
  const log = console.log
  console.log = (...args: unknown[]) => void lines.push(args.join(' '))
  try {
    await command(['--help'])
  } catch {
    // a help that fails names no options
  } finally {
    console.log = log
  }
  const { didYouMean, optionsOf } = await import('./suggest.ts')
  const hint = option.startsWith('--') ? didYouMean(option, optionsOf(lines.join('\n')), (o) => o) : ''
  return `unknown option ${option}.${hint} See its options with --help.`
}

const code = await main(process.argv.slice(2))
// serve keeps running; other commands end here.
if (code !== 0) process.exit(code)
