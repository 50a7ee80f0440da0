/**
 * What one credential costs per format: the issuer's signature (the service's own signing code for
 * jwt_vc_json and for an SD-JWT VC) and the holder's verification (signature, and for the SD-JWT VC every
 * disclosure digest), measured in one process, one after the other, with the jwt_vc_json figures as the
 * baseline of the same run. Prints per-operation times and the SD-JWT / JWT ratios; asserts nothing.
 *
 *   node --import tsx bench/formats.ts [--smoke] [--iterations N]
 */
import { type JsonWebKey, sign } from 'node:crypto'
import { parseArgs } from 'node:util'
import { msoMdocFormat } from '../src/formats/mso-mdoc/index.ts'
import { sdJwtVcFormat } from '../src/formats/sd-jwt-vc/index.ts'
import { signCredential, signSdJwtCredential } from '../src/service/issuance/credentials.ts'
import { didKeyFromPublicKey, generateKeyPair, type JwsAlg, resolveDidKey } from '../src/shared/did-key.ts'
import { decodeJws, verifyJws } from '../src/shared/jws.ts'
import * as mdoc from '../src/shared/mdoc.ts'
import { presentSdJwtVc, verifySdJwtVc } from '../src/shared/sd-jwt.ts'
import { certificatePem, generateIaca, issueDocumentSigner } from '../src/shared/x509.ts'

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

/**
 * mso_mdoc beside dc+sd-jwt, both ES256 with the same claims: the issuer's signature (MSO with six salted
 * element digests), the holder's verification at receipt (issuerAuth chain to the IACA, signature, every
 * digest), and a presentation of two elements made (DeviceResponse with a device signature over the
 * OpenID4VP 1.0 SessionTranscript; a KB-JWT for the SD-JWT VC) and verified (the same checks plus the
 * device signature or KB-JWT), with dc+sd-jwt as the baseline of the same run.
 */
async function runMdoc() {
  await mdoc.prepareMdoc()
  const iaca = await generateIaca({ commonName: 'Bench IACA', uri: 'https://issuer.example' })
  const issuerPair = generateKeyPair('ES256')
  const dsCert = await issueDocumentSigner({
    iaca,
    publicKey: issuerPair.publicKey,
    commonName: 'Bench DS',
    uri: 'https://issuer.example',
  })
  const anchors = [certificatePem(iaca.certificate)]
  const signer = { privateKey: issuerPair.privateKey, x5chain: [dsCert.toString('base64')] }
  const issuer = didKeyFromPublicKey(issuerPair.publicKey)
  const holderPair = generateKeyPair('ES256')
  const holder = didKeyFromPublicKey(holderPair.publicKey)
  const now = Date.now()
  const { id: _id, ...subject } = CREDENTIAL.credentialSubject as Record<string, unknown>
  const issueOne = () =>
    mdoc.issueMdoc({
      docType: mdoc.MDL_DOCTYPE,
      namespaces: { [mdoc.MDL_NAMESPACE]: subject },
      deviceKey: holder.publicJwk as JsonWebKey,
      signer,
      validity: { signed: new Date(now), validFrom: new Date(now), validUntil: new Date(now + 86_400_000) },
      status: STATUS.status_list,
    })
  const issued = await issueOne()
  const key = { ...issuer, privateKey: issuerPair.privateKey, alg: 'ES256' } as Parameters<
    typeof signCredential
  >[1]['key']
  const sdInput = { holderDid: holder.did, key, status: STATUS, now, vct: 'https://x/vct/Id' }
  const sdJwt = (await signSdJwtCredential(CREDENTIAL, sdInput)).proof.jwt
  const issuerKey = () => issuerPair.publicKey
  const handover = { clientId: 'x509_hash:bench', nonce: 'n', responseUri: 'https://verifier.example/r' }
  const deviceSigner = {
    alg: 'ES256' as const,
    sign: (bytes: Uint8Array) =>
      new Uint8Array(sign('sha256', bytes, { key: holderPair.privateKey, dsaEncoding: 'ieee-p1363' })),
  }
  const presentMdoc = async () =>
    mdoc.presentMdoc({
      documents: [{ issuerSigned: issued, disclose: { [mdoc.MDL_NAMESPACE]: ['familyName', 'firstName'] } }],
      sessionTranscript: await mdoc.oid4vpSessionTranscript(handover),
      deviceSigner,
    })
  const deviceResponse = await presentMdoc()
  const presentSd = () =>
    presentSdJwtVc(sdJwt, ['familyName', 'firstName'], {
      alg: 'ES256',
      privateKey: holderPair.privateKey,
      nonce: 'n',
      audience: handover.clientId,
      iat: Math.floor(now / 1000),
    })
  const sdPresentation = await presentSd()
  const session = {
    nonce: 'n',
    audience: handover.clientId,
    responseUri: handover.responseUri,
    nonceRole: '',
    audienceRole: '',
    now,
  }
  const figures = {
    sdSign: await timeIt(() => signSdJwtCredential(CREDENTIAL, sdInput)),
    mdocSign: await timeIt(issueOne),
    sdVerify: await timeIt(() => verifySdJwtVc(sdJwt, { issuerKey, algorithms: ['ES256'], now })),
    mdocVerify: await timeIt(() =>
      mdoc.verifyIssuerAuth(mdoc.decodeIssuerSigned(issued), { trustAnchors: anchors, now }),
    ),
    sdPresent: await timeIt(presentSd),
    mdocPresent: await timeIt(presentMdoc),
    sdCheck: await timeIt(async () => {
      const read = sdJwtVcFormat.presentation.read(sdPresentation, { algorithms: ['ES256'] })
      await read.verifyProof()
      await read.verifyBinding(session)
      const credential = sdJwtVcFormat.credential.read(sdPresentation, { algorithms: ['ES256'] })
      await credential.verifyProof(() => resolveDidKey(issuer.kid), { trustAnchors: [], now })
    }),
    mdocCheck: await timeIt(async () => {
      const read = msoMdocFormat.presentation.read(deviceResponse, { algorithms: ['ES256'] })
      await read.verifyProof()
      await read.verifyBinding(session)
      const credential = msoMdocFormat.credential.read(read.credentials[0]?.raw, { algorithms: ['ES256'] })
      await credential.verifyProof(() => resolveDidKey(issuer.kid), { trustAnchors: anchors, now })
    }),
  }
  const ms = (v: number) => `${v.toFixed(3)} ms`
  const x = (a: number, b: number) => `×${(a / b).toFixed(2)}`
  console.log(
    `ES256   mso_mdoc vs dc+sd-jwt  sign: ${ms(figures.mdocSign)} vs ${ms(figures.sdSign)} (${x(figures.mdocSign, figures.sdSign)})` +
      `   verify at receipt: ${ms(figures.mdocVerify)} vs ${ms(figures.sdVerify)} (${x(figures.mdocVerify, figures.sdVerify)})` +
      `   present 2 of 6: ${ms(figures.mdocPresent)} vs ${ms(figures.sdPresent)} (${x(figures.mdocPresent, figures.sdPresent)})` +
      `   verifier checks: ${ms(figures.mdocCheck)} vs ${ms(figures.sdCheck)} (${x(figures.mdocCheck, figures.sdCheck)})` +
      `   size: ${issued.length} vs ${sdJwt.length} bytes`,
  )
}

console.log(
  `credential formats: ${iterations} iterations per operation, one process (6 claims, all top-level ones disclosable)`,
)
for (const alg of ['EdDSA', 'ES256', 'ES256K'] as const) await run(alg)
await runMdoc()
