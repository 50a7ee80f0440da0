import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { createSecureContext } from 'node:tls'

// HTTPS for the service (`serve --tls-cert FILE --tls-key FILE`, docs/phones.md): a phone's wallet reaches the
// service only over https and under a DNS name its certificate names. This module reads and checks the two
// PEM files once, before anything listens, so a wrong pair is a usage error rather than a handshake failure a
// phone reports as "cannot connect". Only node:crypto / node:tls: `serve` without TLS never loads more.

/** What node:https needs: the certificate chain (leaf first) and the leaf's private key, as PEM text. */
export interface TlsCredentials {
  cert: string
  key: string
}

/** The leaf certificate's facts the CLI prints and the public URL is derived from. */
export interface TlsLeaf {
  /** subjectAltName dNSName entries, in order (RFC 5280 §4.2.1.6). */
  dnsNames: string[]
  /** subjectAltName iPAddress entries. */
  ips: string[]
  subject: string
  notBefore: Date
  notAfter: Date
  /** Issued by itself: a phone trusts it only if that very certificate is installed as a CA (it cannot be). */
  selfSigned: boolean
  /** The leaf's DER: a loopback client of the service pins it (src/harness/loopback-fetch.ts). */
  der: Buffer
}

export class TlsFilesError extends Error {
  override name = 'TlsFilesError'
  constructor(
    /** Which file is wrong: the CLI names the option. */
    readonly file: 'cert' | 'key' | 'pair',
    message: string,
  ) {
    super(message)
  }
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g

function readText(path: string, file: 'cert' | 'key'): string {
  try {
    return readFileSync(path, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EACCES'
          ? 'not readable by this user'
          : code === 'EISDIR'
            ? 'a folder, not a file'
            : (code ?? (error as Error).message)
    throw new TlsFilesError(file, `cannot be read (${why})`)
  }
}

/** The leaf (first certificate) of PEM text, with its names. */
export function tlsLeaf(credentials: Pick<TlsCredentials, 'cert'>): TlsLeaf {
  const blocks = credentials.cert.match(PEM_CERTIFICATE) ?? []
  if (blocks.length === 0) {
    throw new TlsFilesError('cert', 'holds no PEM certificate (-----BEGIN CERTIFICATE-----)')
  }
  const certificates = blocks.map((block, i) => {
    try {
      return new X509Certificate(block)
    } catch (error) {
      throw new TlsFilesError('cert', `certificate #${i + 1} does not parse: ${(error as Error).message}`)
    }
  })
  const leaf = certificates[0] as X509Certificate
  // Node prints subjectAltName as "DNS:a, DNS:b, IP Address:1.2.3.4" (quoted when a name holds a comma).
  const names = (leaf.subjectAltName ?? '').split(/,\s*/).filter(Boolean)
  const of = (prefix: string) =>
    names.filter((n) => n.startsWith(prefix)).map((n) => n.slice(prefix.length).replace(/^"|"$/g, ''))
  return {
    dnsNames: of('DNS:'),
    ips: of('IP Address:'),
    subject: leaf.subject.replace(/\n/g, ', '),
    notBefore: new Date(leaf.validFrom),
    notAfter: new Date(leaf.validTo),
    selfSigned: leaf.issuer === leaf.subject && leaf.verify(leaf.publicKey),
    der: Buffer.from(leaf.raw),
  }
}

/**
 * Reads `certFile` (PEM: the server certificate, then its chain) and `keyFile` (its PEM private key), and
 * checks that they parse and belong together; throws a TlsFilesError naming the file otherwise.
 */
export function readTlsFiles(certFile: string, keyFile: string): TlsCredentials & { leaf: TlsLeaf } {
  const cert = readText(certFile, 'cert')
  const key = readText(keyFile, 'key')
  const leaf = tlsLeaf({ cert })
  let privateKey: KeyObject
  try {
    privateKey = createPrivateKey(key)
  } catch (error) {
    throw new TlsFilesError('key', `is not a PEM private key: ${(error as Error).message}`)
  }
  if (!new X509Certificate(leaf.der).checkPrivateKey(privateKey)) {
    throw new TlsFilesError(
      'pair',
      'the private key is not the key of the certificate (the first certificate of --tls-cert must be the server certificate, and --tls-key its key)',
    )
  }
  try {
    // What node:https itself will do with them: catches what the checks above cannot (e.g. an unsupported key).
    createSecureContext({ cert, key })
  } catch (error) {
    throw new TlsFilesError('pair', `TLS cannot use them: ${(error as Error).message}`)
  }
  return { cert, key, leaf }
}

/**
 * The host name a certificate is for: its first dNSName that is not a wildcard (the name a phone reaches),
 * else undefined. The default public URL with TLS on names it (docs/phones.md).
 */
export function certificateHost(leaf: TlsLeaf): string | undefined {
  return leaf.dnsNames.find((name) => !name.includes('*'))
}

/** Whether the certificate is valid for `host` (a DNS name or an IP literal, brackets allowed). */
export function certificateCovers(credentials: Pick<TlsCredentials, 'cert'>, host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '')
  const leaf = new X509Certificate(tlsLeaf(credentials).der)
  return isIP(bare) !== 0 ? leaf.checkIP(bare) !== undefined : leaf.checkHost(bare) !== undefined
}

/** 398 days: the CA/Browser Forum Baseline Requirements' cap on a server certificate's validity (§6.3.2). */
const MAX_PUBLIC_DAYS = 398
/** Apple's cap for every TLS server certificate, user-installed CA or not (iOS 13, macOS 10.15). */
const MAX_APPLE_DAYS = 825
const DAY = 86_400_000

/**
 * What a phone's wallet would hold against this certificate, served at `publicUrl`: one line each, for the
 * start banner (docs/phones.md, "What a phone's wallet will and will not accept"). Empty when nothing.
 */
export function tlsWarnings(
  credentials: Pick<TlsCredentials, 'cert'>,
  publicUrl: string,
  now = Date.now(),
): string[] {
  const leaf = tlsLeaf(credentials)
  const warnings: string[] = []
  const url = new URL(publicUrl)
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (url.protocol !== 'https:') {
    warnings.push(
      `the public URL ${publicUrl} is not https although the service listens with TLS: wallets are sent to a URL this listener does not answer`,
    )
  } else if (!certificateCovers(credentials, host)) {
    const names = [...leaf.dnsNames, ...leaf.ips].join(', ') || 'none'
    warnings.push(
      `the certificate does not name the public URL's host ${host} (it names: ${names}): wallets will refuse the connection`,
    )
  }
  if (isIP(host) !== 0) {
    warnings.push(
      `the public host ${host} is an IP address, not a DNS name: x509_san_dns verifiers (OpenID4VP 1.0 §5.9.3) need a DNS name, and many wallets refuse IP addresses; use a name (vc-harness dev-cert --name …)`,
    )
  }
  if (leaf.selfSigned) {
    warnings.push(
      'the certificate is self-signed: phones accept a server certificate only through a CA installed and trusted on them; make one with vc-harness dev-cert',
    )
  }
  if (now < leaf.notBefore.getTime()) {
    warnings.push(`the certificate is not valid before ${leaf.notBefore.toISOString()}`)
  } else if (now > leaf.notAfter.getTime()) {
    warnings.push(
      `the certificate expired on ${leaf.notAfter.toISOString()}: make a new one (vc-harness dev-cert)`,
    )
  }
  const days = Math.round((leaf.notAfter.getTime() - leaf.notBefore.getTime()) / DAY)
  if (days > MAX_PUBLIC_DAYS) {
    warnings.push(
      `the certificate is valid for ${days} days: Apple and Chrome refuse more than ${MAX_PUBLIC_DAYS} from public CAs, Apple more than ${MAX_APPLE_DAYS} from any CA; vc-harness dev-cert makes them valid at most 397`,
    )
  }
  return warnings
}
