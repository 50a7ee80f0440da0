// `vc-harness dev-cert`: a development CA and a TLS server certificate for a DNS name the user chooses, so a
// phone's wallet can reach the service over HTTPS (docs/phones.md). The CA is what the phone installs and
// trusts; it is made once per folder and reused by every later run, so a phone that trusts it keeps trusting
// each new server certificate. Certificates are made with @peculiar/x509 on node:crypto's WebCrypto
// (src/shared/x509.ts), P-256 ECDSA throughout.

import { createPrivateKey, generateKeyPairSync, type KeyObject, X509Certificate } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { join, resolve } from 'node:path'
import ipaddr from 'ipaddr.js'
import {
  certificateDer,
  certificateExtension,
  certificatePem,
  generateTestCa,
  issueCertificate,
  type TestCa,
} from '../shared/x509.ts'

const DAY = 86_400_000
const HOUR = 3_600_000

/**
 * The longest leaf validity accepted: 397 days. The CA/Browser Forum Baseline Requirements (§6.3.2) cap
 * server certificates at 398 days, Apple (iOS 14 / macOS 11) and Chrome refuse longer ones from public CAs,
 * and Apple refuses any TLS server certificate over 825 days, user-installed CA or not. A day less than the
 * cap leaves room for time zones and rounding in the clients' checks.
 */
export const MAX_LEAF_DAYS = 397
/** The CA itself is what the phone keeps: ten years, so it need not be installed again. */
const CA_DAYS = 3650

const SERVER_AUTH = '1.3.6.1.5.5.7.3.1' // id-kp-serverAuth, RFC 5280 §4.2.1.12: Apple requires it (iOS 13+)
const NAME_CONSTRAINTS = '2.5.29.30' // RFC 5280 §4.2.1.10

/**
 * The address ranges the CA may certify besides the --ip values given when it is made: private, CGNAT,
 * link-local and loopback ones, where a development machine sits on a LAN (its address changes with DHCP;
 * the CA need not). A CA key that leaks cannot vouch for a public address.
 */
const LAN_RANGES = [
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '100.64.0.0/10',
  '169.254.0.0/16',
  '127.0.0.0/8',
  'fc00::/7',
  'fe80::/10',
  '::1/128',
]

export class DevCertError extends Error {
  override name = 'DevCertError'
}

/** Why `name` is not a DNS name a certificate can carry as dNSName (RFC 1034 §3.5, RFC 5280 §4.2.1.6), or undefined. */
export function dnsNameProblem(name: string): string | undefined {
  if (isIP(name.replace(/^\[|\]$/g, '')) !== 0) {
    return `${name} is an IP address, not a DNS name: give it with --ip, and a name with --name (OpenID4VP's x509_san_dns needs a DNS name)`
  }
  if (name.includes('*')) return `${name}: wildcards are not made (name each host)`
  if (name.length > 253) return `${name}: longer than 253 characters`
  const labels = name.replace(/\.$/, '').split('.')
  const bad = labels.find((l) => !/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i.test(l))
  if (bad !== undefined) {
    return `${name} is not a DNS name (labels of letters, digits and inner hyphens, 1 to 63 characters)`
  }
  return undefined
}

// --- nameConstraints (RFC 5280 §4.2.1.10), DER by hand: @peculiar/x509 has no builder for it ---

const derLength = (n: number): number[] => {
  if (n < 0x80) return [n]
  const bytes: number[] = []
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256)
  return [0x80 | bytes.length, ...bytes]
}
const tlv = (tag: number, content: Buffer) =>
  Buffer.concat([Buffer.from([tag, ...derLength(content.length)]), content])

/** An address and its mask as the iPAddress form of a name constraint takes them (RFC 5280 §4.2.1.10). */
function cidrBytes(cidr: string): Buffer {
  const [address, prefix] = ipaddr.parseCIDR(cidr)
  const mask =
    address.kind() === 'ipv4'
      ? ipaddr.IPv4.subnetMaskFromPrefixLength(prefix)
      : ipaddr.IPv6.subnetMaskFromPrefixLength(prefix)
  return Buffer.from([...address.toByteArray(), ...mask.toByteArray()])
}

/** NameConstraints with permittedSubtrees only: dNSName subtrees and iPAddress ranges. */
function encodeNameConstraints(dns: readonly string[], cidrs: readonly string[]): Uint8Array {
  const subtrees = [
    ...dns.map((name) => tlv(0x30, tlv(0x82, Buffer.from(name.toLowerCase(), 'ascii')))), // [2] dNSName
    ...cidrs.map((cidr) => tlv(0x30, tlv(0x87, cidrBytes(cidr)))), // [7] iPAddress
  ]
  return tlv(0x30, tlv(0xa0, Buffer.concat(subtrees))) // [0] permittedSubtrees
}

interface Permitted {
  dns: string[]
  /** address and mask bytes */
  ips: { address: Buffer; mask: Buffer }[]
}

/** The permitted subtrees of a nameConstraints extnValue (only the forms this module writes are read). */
function decodeNameConstraints(der: Buffer): Permitted {
  const read = (buf: Buffer, at: number) => {
    const tag = buf[at] as number
    let length = buf[at + 1] as number
    let start = at + 2
    if (length & 0x80) {
      const n = length & 0x7f
      length = 0
      for (let i = 0; i < n; i++) length = length * 256 + (buf[start + i] as number)
      start += n
    }
    return { tag, content: buf.subarray(start, start + length), end: start + length }
  }
  const children = (buf: Buffer) => {
    const out: ReturnType<typeof read>[] = []
    for (let at = 0; at < buf.length; ) {
      const item = read(buf, at)
      out.push(item)
      at = item.end
    }
    return out
  }
  const permitted: Permitted = { dns: [], ips: [] }
  const outer = read(der, 0)
  for (const part of children(outer.content)) {
    if (part.tag !== 0xa0) continue // excludedSubtrees: none written here
    for (const subtree of children(part.content)) {
      const base = children(subtree.content)[0]
      if (base?.tag === 0x82) permitted.dns.push(base.content.toString('ascii').toLowerCase())
      if (base?.tag === 0x87) {
        const half = base.content.length / 2
        permitted.ips.push({ address: base.content.subarray(0, half), mask: base.content.subarray(half) })
      }
    }
  }
  return permitted
}

/** The names and addresses a CA's nameConstraints do not permit (empty: all fit, or it has none). */
function outsideConstraints(ca: Buffer, names: readonly string[], ips: readonly string[]): string[] {
  const extension = certificateExtension(ca, NAME_CONSTRAINTS)
  if (!extension) return []
  const permitted = decodeNameConstraints(extension.value)
  // A name form with no permitted subtree is unconstrained (RFC 5280 §4.2.1.10).
  const dnsOk = (name: string) => {
    const n = name.toLowerCase().replace(/\.$/, '')
    return (
      permitted.dns.length === 0 ||
      permitted.dns.some((c) => (c.startsWith('.') ? n.endsWith(c) : n === c || n.endsWith(`.${c}`)))
    )
  }
  const ipOk = (ip: string) => {
    const bytes = Buffer.from(ipaddr.parse(ip).toByteArray())
    const same = permitted.ips.filter((r) => r.address.length === bytes.length)
    return (
      permitted.ips.length === 0 ||
      same.some((r) =>
        bytes.every(
          (b, i) => (b & (r.mask[i] as number)) === ((r.address[i] as number) & (r.mask[i] as number)),
        ),
      )
    )
  }
  return [...names.filter((n) => !dnsOk(n)), ...ips.filter((ip) => !ipOk(ip))]
}

const inLanRanges = (ip: string) => {
  const address = ipaddr.parse(ip)
  return LAN_RANGES.some((cidr) => {
    const [range, prefix] = ipaddr.parseCIDR(cidr)
    return range.kind() === address.kind() && address.match(range, prefix)
  })
}

export interface DevCertOptions {
  /** DNS names of the server (the first is the one phones use); at least one. */
  names: readonly string[]
  /** IP addresses the server certificate also names (optional). */
  ips?: readonly string[]
  /** The folder of the files; created (0700) when missing. */
  out: string
  /** Validity of the server certificate in days, 1 to MAX_LEAF_DAYS; default MAX_LEAF_DAYS. */
  days?: number
  now?: number
}

export interface DevCertResult {
  out: string
  files: { ca: string; caDer: string; caKey: string; cert: string; key: string }
  /** An existing CA in `out` was used (a phone that trusts it keeps trusting). */
  reusedCa: boolean
  caSubject: string
  caNotAfter: Date
  /** What the CA may certify (its nameConstraints), for the printout. */
  caPermits: string[]
  names: string[]
  ips: string[]
  notBefore: Date
  notAfter: Date
  /** The server certificate's validity was cut to end with the CA's. */
  cutToCa: boolean
}

function writePrivate(path: string, text: string) {
  writeFileSync(path, text, { mode: 0o600 })
  // The mode of writeFileSync applies to a new file only: an existing one is tightened too.
  chmodSync(path, 0o600)
}

function loadCa(caFile: string, keyFile: string, at: number): TestCa {
  let certificate: Buffer
  let privateKey: KeyObject
  try {
    certificate = certificateDer(readFileSync(caFile, 'utf8'))
  } catch (error) {
    throw new DevCertError(`${caFile}: not a readable PEM certificate (${(error as Error).message})`)
  }
  try {
    privateKey = createPrivateKey(readFileSync(keyFile, 'utf8'))
  } catch (error) {
    throw new DevCertError(`${keyFile}: not a readable PEM private key (${(error as Error).message})`)
  }
  const cert = new X509Certificate(certificate)
  if (!cert.checkPrivateKey(privateKey)) {
    throw new DevCertError(`${keyFile} is not the key of ${caFile}: restore the pair, or use another --out`)
  }
  if (!cert.ca) throw new DevCertError(`${caFile} is not a CA certificate (basicConstraints cA is not set)`)
  if (new Date(cert.validTo).getTime() <= at) {
    throw new DevCertError(
      `the CA in ${caFile} expired on ${new Date(cert.validTo).toISOString()}: use another --out (a new CA to install on the phone)`,
    )
  }
  return { certificate, privateKey }
}

/**
 * Makes (or reuses) the CA in `out` and a new server certificate for `names` and `ips`; writes ca.pem, ca.crt
 * (the same CA, DER), ca-key.pem (0600), cert.pem (server certificate, then the CA) and key.pem (0600).
 */
export async function makeDevCertificates(options: DevCertOptions): Promise<DevCertResult> {
  const now = options.now ?? Date.now()
  const names = [...new Set(options.names.map((n) => n.toLowerCase().replace(/\.$/, '')))]
  const ips = [...new Set((options.ips ?? []).map((ip) => ip.replace(/^\[|\]$/g, '')))]
  if (names.length === 0) throw new DevCertError('--name is required: the DNS name the phone will use')
  for (const name of names) {
    const problem = dnsNameProblem(name)
    if (problem) throw new DevCertError(`--name ${problem}`)
  }
  for (const ip of ips) {
    if (!ipaddr.isValid(ip) || isIP(ip) === 0)
      throw new DevCertError(`--ip ${ip}: not an IPv4 or IPv6 address`)
  }
  const days = options.days ?? MAX_LEAF_DAYS
  if (!Number.isInteger(days) || days < 1 || days > MAX_LEAF_DAYS) {
    throw new DevCertError(
      `--days ${days}: whole days from 1 to ${MAX_LEAF_DAYS} (phones refuse server certificates valid longer than 398 days: CA/Browser Forum, Apple, Chrome)`,
    )
  }
  const out = resolve(options.out)
  const files = {
    ca: join(out, 'ca.pem'),
    caDer: join(out, 'ca.crt'),
    caKey: join(out, 'ca-key.pem'),
    cert: join(out, 'cert.pem'),
    key: join(out, 'key.pem'),
  }
  if (existsSync(out) && !statSync(out).isDirectory()) throw new DevCertError(`--out ${out}: not a folder`)
  try {
    mkdirSync(out, { recursive: true, mode: 0o700 })
  } catch (error) {
    throw new DevCertError(
      `--out ${out}: cannot be created (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    )
  }

  const haveCa = existsSync(files.ca)
  const haveCaKey = existsSync(files.caKey)
  if (haveCa !== haveCaKey) {
    throw new DevCertError(
      haveCa
        ? `${files.ca} exists but ${files.caKey} does not: a CA cannot sign without its key. Restore the key, or use another --out (a new CA to install on the phone)`
        : `${files.caKey} exists but ${files.ca} does not: restore ca.pem, or use another --out`,
    )
  }
  let ca: TestCa
  if (haveCa) {
    ca = loadCa(files.ca, files.caKey, now)
    const outside = outsideConstraints(ca.certificate, names, ips)
    if (outside.length > 0) {
      throw new DevCertError(
        `the CA in ${out} may not certify ${outside.join(', ')} (its name constraints, RFC 5280 §4.2.1.10, permit ${permitsOf(ca.certificate).join(', ')}): use another --out for a new CA, and install that one on the phone`,
      )
    }
  } else {
    const day = new Date(now).toISOString().slice(0, 10)
    // Name constraints keep a development CA (which phones trust for every site) from vouching for anything
    // but these names, their subdomains and LAN addresses, should its key ever leak. Critical, as RFC 5280
    // §4.2.1.10 asks.
    const cidrs = [
      ...LAN_RANGES,
      ...ips.filter((ip) => !inLanRanges(ip)).map((ip) => `${ip}/${isIP(ip) === 4 ? 32 : 128}`),
    ]
    ca = await generateTestCa({
      // The name a person sees in the phone's list of trusted certificates.
      name: `CN=vc-harness development CA for ${names[0]} (${day}), O=vc-harness`,
      now,
      validityDays: CA_DAYS,
      extensions: [{ oid: NAME_CONSTRAINTS, critical: true, value: encodeNameConstraints(names, cidrs) }],
    })
    writePrivate(files.caKey, ca.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString())
  }
  const caCert = new X509Certificate(ca.certificate)
  const caNotAfter = new Date(caCert.validTo)
  const notBefore = new Date(now - HOUR) // a phone's clock a little behind still accepts it
  let notAfter = new Date(notBefore.getTime() + days * DAY)
  const cutToCa = notAfter > caNotAfter
  if (cutToCa) notAfter = caNotAfter

  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const leaf = await issueCertificate({
    issuer: ca,
    publicKey,
    // Clients match the subjectAltName only (RFC 6125 §6.4.4; Apple and Chrome ignore the CN); CN for people.
    subject: `CN=${names[0]}`,
    dns: names,
    ips,
    extendedKeyUsages: [SERVER_AUTH],
    notBefore,
    notAfter,
  })
  const caPem = certificatePem(ca.certificate)
  writeFileSync(files.ca, caPem)
  writeFileSync(files.caDer, ca.certificate)
  // The chain a TLS server sends: its certificate, then the CA (RFC 8446 §4.4.2: the sender's first).
  writeFileSync(files.cert, `${certificatePem(leaf).trim()}\n${caPem.trim()}\n`)
  writePrivate(files.key, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString())
  return {
    out,
    files,
    reusedCa: haveCa,
    caSubject: caCert.subject.replace(/\n/g, ', '),
    caNotAfter,
    caPermits: permitsOf(ca.certificate),
    names,
    ips,
    notBefore,
    notAfter,
    cutToCa,
  }
}

/** A CA's permitted names as text: "wallet-test.example.lan (and subdomains)", "192.168.0.0/16", … */
function permitsOf(ca: Buffer): string[] {
  const extension = certificateExtension(ca, NAME_CONSTRAINTS)
  if (!extension) return ['any name (no name constraints)']
  const permitted = decodeNameConstraints(extension.value)
  return [
    ...permitted.dns.map((d) => `${d} and names under it`),
    ...permitted.ips.map(({ address, mask }) => {
      const prefix = [...mask].reduce((bits, byte) => bits + byte.toString(2).replace(/0/g, '').length, 0)
      return `${ipaddr.fromByteArray([...address]).toString()}/${prefix}`
    }),
  ]
}
