// Runs the OpenWallet Foundation issuer or verifier of the tests (test/fixtures/owf-peers.ts) as a server a
// test plan can be pointed at, correct or with one deliberate flaw:
//
//   node --import tsx scripts/owf-peer.ts issuer   [--flaw accept-any-nonce|replayable-code] [--port N]
//                                        [--host 127.0.0.1|localhost] [--token-lifetime SECONDS]
//   node --import tsx scripts/owf-peer.ts verifier [--flaw ignore-kb-nonce] [--port N] [--host 127.0.0.1|localhost]
//                                        [--trust-issuer DID-or-PEM-file]… [--vct VCT]… [--claims PATH,…]
//
// It prints `owf-peer listening on <origin>` and the control API's URLs (the head of owf-peers.ts describes
// them), then serves until SIGTERM or SIGINT, or until its stdin closes when stdin is a pipe (a parent that
// dies takes it along; run from a terminal or with stdin from /dev/null it ignores stdin). Started through
// `npx tsx`, a SIGTERM to npx does not reach it (npm exec forwards no signal): start it with node as below.
// For example:
//
//   node --import tsx scripts/owf-peer.ts issuer --port 8401 &
//   vc-harness issuer-test --offer-command "curl -sf http://127.0.0.1:8401/control/offer" \
//     --deferred-offer-command "curl -sf 'http://127.0.0.1:8401/control/offer?deferred=1'" \
//     --complete-command "curl -sf -X POST --data-urlencode transaction_id={transaction_id} http://127.0.0.1:8401/control/complete"
//   node --import tsx scripts/owf-peer.ts verifier --port 8402 --trust-issuer did:key:z6Mk… &
//   vc-harness verifier-test --request-command "curl -sf http://127.0.0.1:8402/control/request" \
//     --result-command "curl -sf -G --data-urlencode state={state} http://127.0.0.1:8402/control/result"

import { fstatSync, readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import {
  ISSUER_FLAWS,
  type IssuerFlaw,
  startOwfIssuerPeer,
  startOwfVerifierPeer,
  VERIFIER_FLAWS,
  type VerifierFlaw,
} from '../test/fixtures/owf-peers.ts'

const USAGE = `usage: node --import tsx scripts/owf-peer.ts issuer|verifier [options]
  --flaw NAME             issuer: ${ISSUER_FLAWS.join(' | ')}; verifier: ${VERIFIER_FLAWS.join(' | ')} (default: none, correct)
  --port N                the port to listen on (127.0.0.1; default: any free port)
  --host NAME             127.0.0.1 (default) or localhost: the host name in the peer's URLs
  --token-lifetime S      issuer: the access tokens' expires_in in seconds (default 300)
  --trust-issuer VALUE    verifier: an issuer whose SD-JWT VCs it accepts: a DID, or a file with a PEM CA (repeatable)
  --vct VCT               verifier: the vct_values of its DCQL queries (repeatable; default none: any vct)
  --claims PATH,...       verifier: the claims its DCQL queries ask for (dotted paths; default none)`

function fail(message: string): never {
  process.stderr.write(`owf-peer: ${message}\n${USAGE}\n`)
  process.exit(2)
}

let parsed: ReturnType<typeof parse>
function parse() {
  return parseArgs({
    allowPositionals: true,
    options: {
      flaw: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      'token-lifetime': { type: 'string' },
      'trust-issuer': { type: 'string', multiple: true },
      vct: { type: 'string', multiple: true },
      claims: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
  })
}
try {
  parsed = parse()
} catch (error) {
  fail((error as Error).message)
}
const { values, positionals } = parsed
if (values.help) {
  process.stdout.write(`${USAGE}\n`)
  process.exit(0)
}
const [role, ...extra] = positionals
if (role !== 'issuer' && role !== 'verifier') fail('say issuer or verifier')
if (extra.length > 0) fail(`unexpected ${extra.join(' ')}`)

const port = values.port === undefined ? undefined : Number(values.port)
if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port < 65536))
  fail(`--port ${values.port}`)
const host = values.host
if (host !== undefined && host !== '127.0.0.1' && host !== 'localhost')
  fail('--host is 127.0.0.1 or localhost')
const hostName = host as '127.0.0.1' | 'localhost' | undefined
const common = { ...(port !== undefined && { port }), ...(hostName !== undefined && { host: hostName }) }

let peer: { origin: string; usage: string[]; close(): Promise<void> }
let about: string[]
try {
  if (role === 'issuer') {
    if (values['trust-issuer'] || values.vct || values.claims)
      fail('--trust-issuer, --vct and --claims are verifier options')
    const flaw = values.flaw
    if (flaw !== undefined && !(ISSUER_FLAWS as readonly string[]).includes(flaw)) {
      fail(`--flaw ${flaw}: an issuer's flaws are ${ISSUER_FLAWS.join(', ')}`)
    }
    const lifetime = values['token-lifetime'] === undefined ? undefined : Number(values['token-lifetime'])
    if (lifetime !== undefined && !(Number.isInteger(lifetime) && lifetime > 0)) {
      fail(`--token-lifetime ${values['token-lifetime']}`)
    }
    const issuer = await startOwfIssuerPeer({
      ...common,
      ...(flaw !== undefined && { flaw: flaw as IssuerFlaw }),
      ...(lifetime !== undefined && { accessTokenLifetimeSeconds: lifetime }),
    })
    peer = issuer
    about = [`credential issuer ${issuer.issuer} (did ${issuer.did})`]
  } else {
    if (values['token-lifetime'] !== undefined) fail('--token-lifetime is an issuer option')
    const flaw = values.flaw
    if (flaw !== undefined && !(VERIFIER_FLAWS as readonly string[]).includes(flaw)) {
      fail(`--flaw ${flaw}: a verifier's flaws are ${VERIFIER_FLAWS.join(', ')}`)
    }
    const trustedIssuer = (values['trust-issuer'] ?? []).map((value) => {
      if (value.startsWith('did:')) return value
      try {
        return readFileSync(value, 'utf8')
      } catch (error) {
        return fail(
          `--trust-issuer ${value}: neither a DID nor a readable PEM file (${(error as Error).message})`,
        )
      }
    })
    const verifier = await startOwfVerifierPeer({
      ...common,
      ...(flaw !== undefined && { flaw: flaw as VerifierFlaw }),
      trustedIssuer,
      ...(values.vct && { vct: values.vct }),
      ...(values.claims && { claims: values.claims.flatMap((c) => c.split(',')).filter(Boolean) }),
    })
    peer = verifier
    const trusted = verifier.trusted()
    about = [
      `verifier did ${verifier.did}`,
      `trusted issuers: ${[...trusted.dids, ...trusted.cas].join('; ') || 'none (every SD-JWT VC is refused as untrusted)'}`,
    ]
  }
} catch (error) {
  process.stderr.write(`owf-peer: could not start: ${(error as Error).message}\n`)
  process.exit(1)
}

process.stdout.write(
  [
    `owf-peer listening on ${peer.origin}`,
    `${role}${values.flaw ? ` with flaw ${values.flaw}` : ' (correct)'}: ${about.join('; ')}`,
    ...peer.usage,
    '',
  ].join('\n'),
)

let closing = false
const stop = async () => {
  if (closing) return
  closing = true
  await peer.close()
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
// a pipe on stdin: its end means the parent is gone
const stdin = fstatSync(0)
if (stdin.isFIFO() || stdin.isSocket()) {
  process.stdin.on('end', stop)
  process.stdin.on('close', stop)
  process.stdin.resume()
}
