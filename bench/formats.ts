/**
 * What one credential costs per format: the issuer's signature (the service's own signing code for
 * jwt_vc_json and for an SD-JWT VC) and the holder's verification (signature, and for the SD-JWT VC every
 * disclosure digest), measured in one process, one after the other, with the jwt_vc_json figures as the
 * baseline of the same run. Prints per-operation times and the SD-JWT / JWT ratios; asserts nothing.
 *
 *   node --import tsx bench/formats.ts [--smoke] [--iterations N]
 */
import { parseArgs } from 'node:util'
import { signCredential, signSdJwtCredential } from '../src/service/issuance/credentials.ts'
import { didKeyFromPublicKey, generateKeyPair, type JwsAlg, resolveDidKey } from '../src/shared/did-key.ts'
import { decodeJws, verifyJws } from '../src/shared/jws.ts'
import { verifySdJwtVc } from '../src/shared/sd-jwt.ts'

const { values } = parseArgs({
  options: { smoke: { type: 'boolean', default: false }, iterations: { type: 'string' } },
})
const iterations = Number(values.iterations ?? (values.smoke ? 20 : 2000))
if (!Number.isInteger(iterations) || iterations < 1) {
  console.error('usage: node --import tsx bench/formats.ts [--smoke] [--iterations N]')
  process.exit(2)
}

const CREDENTIAL = {
  '@context': ['https://www.w3.org/2018/credentials/v1'],
  id: 'urn:uuid:3978344f-8596-4c3a-a978-8fcaba3903c5',
  type: ['VerifiableCredential', 'VerifiableId'],
  credentialSubject: {
    familyName: 'Lovelace',
    firstName: 'Ada',
    dateOfBirth: '1815-12-10',
    placeOfBirth: 'London',
    nationality: 'GB',
    address: { locality: 'London', country: 'GB' },
  },
}
const STATUS = { status_list: { idx: 42, uri: 'https://issuer.example/oid4vci/demo/token-status/1' } }

async function timeIt(fn: () => unknown): Promise<number> {
  for (let i = 0; i < Math.min(50, iterations); i++) await fn() // warm-up
  const started = process.hrtime.bigint()
  for (let i = 0; i < iterations; i++) await fn()
  return Number(process.hrtime.bigint() - started) / 1e6 / iterations
}

async function run(alg: JwsAlg) {
  const issuerPair = generateKeyPair(alg)
  const issuer = didKeyFromPublicKey(issuerPair.publicKey)
  const key = { ...issuer, privateKey: issuerPair.privateKey, alg } as Parameters<
    typeof signCredential
  >[1]['key']
  const holder = didKeyFromPublicKey(generateKeyPair('ES256').publicKey)
  const now = Date.now()
  const input = { holderDid: holder.did, key, status: {}, now }
  const jwt = signCredential(CREDENTIAL, input).jwt
  const sdJwt = (await signSdJwtCredential(CREDENTIAL, { ...input, status: STATUS, vct: 'https://x/vct/Id' }))
    .proof.jwt
  const issuerKey = (header: Record<string, unknown>) => resolveDidKey(String(header.kid)).publicKey
  const figures = {
    jwtSign: await timeIt(() => signCredential(CREDENTIAL, input)),
    sdSign: await timeIt(() =>
      signSdJwtCredential(CREDENTIAL, { ...input, status: STATUS, vct: 'https://x/vct/Id' }),
    ),
    jwtVerify: await timeIt(() => verifyJws(jwt, issuerKey(decodeJws(jwt).header), { algorithms: [alg] })),
    sdVerify: await timeIt(() => verifySdJwtVc(sdJwt, { issuerKey, algorithms: [alg], now })),
  }
  const ms = (v: number) => `${v.toFixed(3)} ms`
  console.log(
    `${alg.padEnd(6)}  sign: jwt_vc_json ${ms(figures.jwtSign)}, dc+sd-jwt ${ms(figures.sdSign)} (×${(figures.sdSign / figures.jwtSign).toFixed(2)})` +
      `   verify: jwt_vc_json ${ms(figures.jwtVerify)}, dc+sd-jwt ${ms(figures.sdVerify)} (×${(figures.sdVerify / figures.jwtVerify).toFixed(2)})` +
      `   size: ${jwt.length} vs ${sdJwt.length} bytes, ${sdJwt.split('~').length - 2} disclosures`,
  )
}

console.log(
  `credential formats: ${iterations} iterations per operation, one process (6 claims, all top-level ones disclosable)`,
)
for (const alg of ['EdDSA', 'ES256', 'ES256K'] as const) await run(alg)
