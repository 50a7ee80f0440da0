import { networkInterfaces } from 'node:os'
import { relative } from 'node:path'
import { parseArgs } from 'node:util'

export const DEV_CERT_USAGE = `Usage: vc-harness dev-cert --name NAME [--name NAME …] [--ip ADDRESS …] [--out DIR] [--days N]

Makes a development CA and a TLS server certificate for the DNS name a phone will use, so its wallet can
reach \`vc-harness serve --tls-cert … --tls-key …\` over HTTPS (docs/phones.md). Writes into DIR:
  ca.pem      the CA certificate: install it on the phone and trust it (ca.crt: the same in DER)
  ca-key.pem  the CA's private key (mode 0600): stays here; later runs sign with it
  cert.pem    the server certificate followed by the CA: pass it as --tls-cert
  key.pem     the server certificate's private key (mode 0600): pass it as --tls-key
Run again (another name, a renewal) with the same --out: the CA is reused, so a phone that trusts it needs
nothing new. The CA may certify only the names it was first made for (and names under them) and LAN
addresses (RFC 5280 name constraints): a leaked CA key cannot impersonate other sites.

Options:
  --name NAME   DNS name of this machine as the phone resolves it (repeatable; the first is the main one),
                e.g. wallet-test.example.lan, or 192-168-1-20.sslip.io (public wildcard DNS). Not an IP address:
                OpenID4VP's x509_san_dns client identifiers need a DNS name
  --ip ADDRESS  also name this IP address in the certificate (repeatable), e.g. 192.168.1.20
  --out DIR     folder of the files; default .vc-harness/tls (created 0700)
  --days N      validity of the server certificate, 1 to 397 days; default 397 (phones refuse certificates
                valid longer than 398 days: CA/Browser Forum Baseline Requirements, Apple, Chrome)
  -h, --help    show this text

Exit codes: 0 written; 2 bad options, or an existing CA in DIR that is unusable or may not certify the names.`

const DEFAULT_OUT = '.vc-harness/tls'

const usage = (message: string) =>
  Object.assign(new TypeError(`${message} (see vc-harness dev-cert --help)`), {
    code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE',
  })

/** A mistake main.ts prints without a stack trace, exit 2 (recognised by name, like serve's UserError). */
class DevCertUserError extends Error {
  override name = 'UserError'
  readonly exitCode = 2
}

/** This machine's non-internal IPv4 addresses: what a phone on the same Wi-Fi reaches. */
function lanAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((a) => a !== undefined && a.family === 'IPv4' && !a.internal)
    .map((a) => (a as { address: string }).address)
}

/** A path as the user would type it from here: relative when inside the working folder. */
const shown = (path: string) => {
  const rel = relative(process.cwd(), path)
  return rel && !rel.startsWith('..') ? rel : path
}

export async function devCert(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      name: { type: 'string', multiple: true },
      ip: { type: 'string', multiple: true },
      out: { type: 'string' },
      days: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  })
  if (values.help) {
    console.log(DEV_CERT_USAGE)
    return 0
  }
  if (!values.name?.length)
    throw usage('--name is required: the DNS name the phone will use for this machine')
  const days = values.days === undefined ? undefined : Number(values.days)
  if (values.days !== undefined && (values.days.trim() === '' || !Number.isInteger(days))) {
    throw usage(`--days ${values.days}: a whole number of days`)
  }
  const { DevCertError, makeDevCertificates } = await import('../harness/dev-cert.ts')
  let result: Awaited<ReturnType<typeof makeDevCertificates>>
  try {
    result = await makeDevCertificates({
      names: values.name,
      ips: values.ip ?? [],
      out: values.out ?? DEFAULT_OUT,
      ...(days !== undefined ? { days } : {}),
    })
  } catch (error) {
    if (error instanceof DevCertError) throw new DevCertUserError(error.message)
    throw error
  }
  const { files, names, ips } = result
  const name = names[0] as string
  const date = (d: Date) => d.toISOString().slice(0, 10)
  const lines = [
    `vc-harness dev-cert: a server certificate for ${[...names, ...ips].join(', ')}`,
    `  valid ${date(result.notBefore)} to ${date(result.notAfter)}${result.cutToCa ? ' (cut to the end of the CA)' : ''}; phones refuse server certificates valid longer than 398 days`,
    result.reusedCa
      ? `  CA reused from ${shown(files.ca)}: a phone that already trusts it needs nothing new`
      : `  CA made: ${result.caSubject}`,
    `  the CA is valid until ${date(result.caNotAfter)} and may certify only: ${result.caPermits.join(', ')}`,
    '',
    `Files in ${shown(result.out)}:`,
    `  ca.pem      the CA certificate: install it on the phone and trust it (ca.crt is the same in DER)`,
    `  ca-key.pem  the CA's private key (0600): keep it here, never copy it; later runs sign with it`,
    `  cert.pem    the server certificate, then the CA: --tls-cert`,
    `  key.pem     the server certificate's private key (0600): --tls-key`,
    '',
    'Next (each step in docs/phones.md):',
  ]
  const lan = ips.length > 0 ? ips.filter((ip) => ip.includes('.')) : lanAddresses()
  const sslip = lan.map((ip) => `${ip.replace(/\./g, '-')}.sslip.io`)
  const wildcard = /\.(sslip\.io|nip\.io)$/.test(name)
  lines.push(
    wildcard
      ? `  1. ${name} is a public wildcard-DNS name: the phone must be able to resolve public DNS (no DNS filter that drops private answers)`
      : `  1. Make ${name} resolve to this machine${lan.length ? ` (${lan.join(', ')})` : ''} on the phone's network: a DNS entry in the router, or a tunnel;${sslip.length ? ` or make a certificate for a public wildcard-DNS name instead: --name ${sslip[0]}` : ''}`,
    result.reusedCa
      ? `  2. The phone trusts ${shown(files.ca)} already if it did before; otherwise install it and trust it (step 2 of docs/phones.md)`
      : `  2. Copy ${shown(files.ca)} to the phone, install it as a CA certificate and trust it (Android: Settings → Security → Encryption & credentials → Install a certificate → CA certificate; iOS: install the profile, then Settings → General → About → Certificate Trust Settings)`,
    '  3. Serve under that name:',
    `     npx vc-harness serve --sandbox --host 0.0.0.0 --port 8443 --tls-cert ${shown(files.cert)} --tls-key ${shown(files.key)} --public-url https://${name}:8443`,
    '     (add --wallet-plan all for the wallet test plans)',
  )
  console.log(lines.join('\n'))
  return 0
}
