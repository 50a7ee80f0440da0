// --tls-cert FILE --tls-key FILE, shared by `serve` (with --sandbox, --wallet-plan and --workers) and
// `wallet-test` (docs/phones.md). Only node: modules behind it: `--help` and usage errors stay fast.

import { readTlsFiles, type TlsCredentials, TlsFilesError, type TlsLeaf } from '../service/tls.ts'

/** The two options as parseArgs gives them. */
export interface TlsOptionValues {
  'tls-cert'?: string | undefined
  'tls-key'?: string | undefined
}

/** parseArgs' option definitions of the pair. */
export const TLS_PARSE_OPTIONS = {
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
} as const

/** The two options' help lines, their descriptions starting at `column` (serve: 22, wallet-test: 26). */
export function tlsUsage(column: number): string {
  const option = (name: string, text: string) => `  ${name.padEnd(column - 3)} ${text}`
  const more = (text: string) => `${' '.repeat(column)}${text}`
  return [
    option('--tls-cert FILE', 'listen with HTTPS: the server certificate (PEM), followed by its chain; with'),
    option('--tls-key FILE', "--tls-key, the certificate's private key (PEM). Without --public-url, wallets"),
    more("are sent to https://<the certificate's first DNS name>:<port>. vc-harness dev-cert"),
    more('makes both for a name a phone uses (docs/phones.md)'),
  ].join('\n')
}

/** A usage mistake main.ts prints alone, exit 2 (recognised by name, like serve's UserError). */
class TlsUserError extends Error {
  override name = 'UserError'
  readonly exitCode = 2
}

/**
 * Both or neither: throws `usage(message)` for one without the other. Returns the file pair, or undefined
 * without TLS. Touches no file (parse-time check).
 */
export function tlsFilePair(
  values: TlsOptionValues,
  usage: (message: string) => Error,
): { certFile: string; keyFile: string } | undefined {
  const certFile = values['tls-cert']
  const keyFile = values['tls-key']
  if (certFile === undefined && keyFile === undefined) return undefined
  if (certFile === undefined) throw usage('--tls-key needs --tls-cert (the certificate it is the key of)')
  if (keyFile === undefined) throw usage('--tls-cert needs --tls-key (the private key of the certificate)')
  if (certFile.trim() === '' || keyFile.trim() === '') throw usage('--tls-cert and --tls-key need file names')
  return { certFile, keyFile }
}

/** Reads and checks the pair; an unreadable, unparsable or mismatched file is a usage error (exit 2). */
export function loadTls(pair: { certFile: string; keyFile: string }): TlsCredentials & { leaf: TlsLeaf } {
  try {
    return readTlsFiles(pair.certFile, pair.keyFile)
  } catch (error) {
    if (!(error instanceof TlsFilesError)) throw error
    const subject =
      error.file === 'cert'
        ? `--tls-cert ${pair.certFile}`
        : error.file === 'key'
          ? `--tls-key ${pair.keyFile}`
          : `--tls-cert ${pair.certFile} and --tls-key ${pair.keyFile}`
    throw new TlsUserError(`${subject}: ${error.message}`)
  }
}
