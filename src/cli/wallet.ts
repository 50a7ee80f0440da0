import { existsSync, readFileSync } from 'node:fs'
import { delimiter } from 'node:path'
import { createInterface } from 'node:readline/promises'
import { parseArgs } from 'node:util'
// Types only: the wallet stack (Veramo, oid4vci-client) is imported when a command runs, not for --help.
import type {
  AuthorizationOptions,
  HolderKeyType,
  IssuanceFlow,
  IssuanceMisbehaviour,
  IssuanceProtocol,
  PresentationMisbehaviour,
  PresentationResult,
  PresentStep,
  ReceiveResult,
  ReceiveStep,
  StoredCredential,
  V1ProofType,
  Wallet,
} from '../wallet/index.ts'

export const WALLET_USAGE = `Usage: vc-harness wallet <command> [options]

Commands:
  receive <deep link>   receive a credential from an OpenID4VCI credential offer, given as the QR code
                        carries it (openid-credential-offer://?credential_offer_uri=…, any scheme, or
                        ?credential_offer=<JSON>); prints what was received as JSON on stdout. An offer with
                        a pre-authorized code is redeemed with it; one with an authorization_code grant (or no
                        grants) takes the authorization code flow as HAIP 1.0 profiles it: a pushed
                        authorization request (PAR) with PKCE S256, the authorization endpoint, the token
                        request, with a wallet attestation and DPoP, the token DPoP-bound (see --flow)
  request               wallet-initiated issuance, no offer: --issuer <credential issuer URL> --configuration
                        <credential_configuration_id>; the issuer metadata, its authorization server's, then
                        the authorization code flow as for receive; prints what was received
  present <link>        answer an OpenID4VP authorization request, given as the QR code carries it, with
                        the held credentials; prints the outcome as JSON on stdout (also the verifier's
                        error answer, before exiting 1). OpenID4VP 1.0 (client_id with a prefix:
                        decentralized_identifier:did:key…, x509_san_dns:<dns>, x509_hash:<hash>,
                        redirect_uri:<uri>; request_uri get or post, or the parameters by value): a DCQL
                        query answered with dc+sd-jwt (only the asked-for disclosures, KB-JWT),
                        jwt_vc_json, ldp_vc and mso_mdoc (a DeviceResponse of the asked-for elements)
                        presentations, direct_post or direct_post.jwt (encrypted, ECDH-ES).
                        A bare did: client_id: Presentation Exchange (draft 20), direct_post.
  open <link>           what a wallet app does with a scanned link: a credential offer (credential_offer_uri
                        or credential_offer) is received, an authorization request (request_uri, request,
                        client_id, dcql_query, presentation_definition; any scheme: openid-vp://,
                        openid4vp://, haip://, https://…) is answered as present does, except that a query
                        the held credentials cannot satisfy is declined with access_denied. Prints the outcome
                        as JSON on stdout ({"kind": "issuance"|"presentation", "status": …}). Give the link
                        as one argument (quote it: it carries & and %).
  dc-api                answer an OpenID4VP 1.0 request over the W3C Digital Credentials API (Appendix A) as
                        a platform wallet does: --origin <the caller's origin> and the request the page gave
                        navigator.credentials.get (one {protocol, data} entry, or {digital: {requests}}) from
                        --request FILE or stdin; openid4vp-v1-unsigned, -signed (decentralized_identifier,
                        x509_san_dns, x509_hash; expected_origins must hold the origin) or -multisigned
                        (accepted when one signature of a supported prefix verifies). Prints the
                        DigitalCredential answer {protocol, data} as JSON on stdout (data {vp_token} or
                        {response: <JWE>}, bound to origin:<origin>; a refusal or a decline: {error,
                        error_description}); nothing is sent anywhere. Wallet options as for present
  list                  print the holder and the credentials of a wallet file as JSON

Options:
  --wallet FILE         keep the holder key and the credentials in FILE (JSON, created on first use), and the
                        nonces of the last 64 requests answered (a request reusing one is refused, OpenID4VP
                        1.0 §14.1). FILE holds the holder's private key unencrypted (mode 0600): test
                        identities only. Without it (and without VC_HARNESS_WALLET), receive and open use a
                        throw-away in-memory wallet.
  --key-type T          holder key of a new wallet: Ed25519 (default), P-256 or secp256k1. An mdoc
                        (mso_mdoc) is bound to an ES256 device key: receive it into a P-256 wallet
  --tx-code C           the transaction code the issuer showed out of band
  --protocol P          OpenID4VCI generation: auto (default: 1.0 when the issuer metadata has
                        credential_metadata, else draft 15), 1.0 or draft15. The authorization code flow is
                        always spoken on the 1.0 path
  --issuer URL          request: the credential issuer identifier
  --configuration ID    request: the credential_configuration_id of its metadata to ask for
  --flow F              receive/open: pre-authorized_code (the default when the offer has one) or
                        authorization_code (the default for an offer with an authorization_code grant only,
                        or without grants; asked for, it takes that flow for an offer granting both)
  --redirect-uri URI    authorization code flow: the wallet's redirect_uri; default
                        https://wallet.vc-harness.invalid/callback
  --client-id ID        authorization code flow: the client_id (and the attestation's sub); default
                        vc-harness-wallet-<hash of the holder DID>
  --wallet-provider-key FILE
                        authorization code flow: sign the wallet attestation with this wallet provider's
                        private JWK (JSON; EC P-256 or OKP Ed25519). Default: the built-in TEST provider,
                        which only a deployment configured to trust it (walletProviders: ["test"]) accepts
  --wallet-provider-issuer ID
                        the attestation's iss with --wallet-provider-key; default the key's thumbprint URN
  --batch N             receive/request/open: ask for N copies of the credential (OpenID4VCI 1.0 §3.3.2), each
                        bound to a key of its own (the holder key and N-1 fresh keys of its type), one key
                        proof each with one c_nonce; at most the issuer's batch_credential_issuance.batch_size
                        (more, or an issuer announcing no batch issuance: refused before anything is sent).
                        Every copy is kept with its key (in FILE with --wallet); present signs a copy with its
                        key (OpenID4VP 1.0; Presentation Exchange presents the holder key's copies only).
                        Default 1
  --key-attestation     attach a key attestation (OpenID4VCI 1.0 Appendix D) to every jwt proof even where the
                        credential configuration requires none (key_attestations_required: always attached).
                        Signed by the wallet provider (--wallet-provider-key, default the TEST provider)
  --proof-type P        the key proof on the 1.0 path: jwt (default) or attestation (Appendix F.3: one key
                        attestation of every key, with the c_nonce; the default where a configuration offers
                        it and not jwt)
  --interactive         authorization code flow: when the authorization endpoint shows a page instead of
                        redirecting at once, print its URL on stderr and read the URL the browser was sent
                        back to (the redirect_uri with code, state, iss) from stdin. Without it such a page
                        fails the flow, naming the URL to open
  --trust-anchor FILE   a PEM certificate (CA or pinned leaf) an x5c chain may lead to (repeatable):
                        receive: an SD-JWT VC's issuer (e.g. the issuer's GET /oid4vci/<tenant>/trust-anchor)
                        or an mdoc's IACA root (issuerAuth x5chain; e.g. GET /oid4vci/<tenant>/iaca);
                        present: an x509_san_dns / x509_hash verifier's request object. Without one, x5c-signed
                        credentials, mdocs and x509 requests are refused.
  --share WHAT          receive/open: what may be shared with an issuer whose offer asks for a presentation
                        before it issues (a draft-15 presentation_definition, answered in a di_vp proof):
                        all, or a held credential's id, type or issuer (DID or credential issuer URL);
                        repeatable. Default: nothing; such an offer is refused before anything is sent.
  --http-timeout S      the deadline of every HTTP request of the wallet, in seconds (connect, headers and
                        body); default 30
  --http-max-body BYTES the most of an answer's body the wallet reads (larger: refused, the connection
                        closed); default 1048576 (1 MiB). No redirect is ever followed.
  --decline-unsatisfied present: when the held credentials cannot satisfy the DCQL query or the presentation
                        definition, answer access_denied naming what is missing (default: fail, send nothing;
                        open always declines)
  --ldp-proof-type T    present/open: sign every ldp_vp (the answer carrying ldp_vc credentials, Presentation
                        Exchange or OpenID4VP 1.0) with proof type T: Ed25519Signature2018,
                        JsonWebSignature2020 or eddsa-rdfc-2022 (Ed25519 key), JsonWebSignature2020 or
                        ecdsa-rdfc-2019 (P-256), EcdsaSecp256k1Signature2019 or JsonWebSignature2020
                        (secp256k1); one the key cannot make fails before anything is sent. Default: the
                        first the verifier lists that the key makes
  --no-wait             do not poll a deferred credential: print its transaction id and stop
  --timeout S           how long to poll a deferred credential, in seconds; default 600
  --misbehave M         do one thing wrong on purpose (repeatable; see src/wallet/README.md).
                        receive: wrong-nonce, replayed-nonce, bad-signature, wrong-aud, expired-iat,
                        replayed-code, wrong-tx-code, foreign-kid, missing-tx-code, jwk-with-private-key,
                        wrong-typ, alg-none; against a 1.0 issuer also legacy-proof, legacy-format-request,
                        and key-attestation-foreign-key: the jwt proof's key_attestation header carries a
                        key attestation by the wallet's provider of a freshly generated key, not of the key
                        that signs the proof (Appendix D.1, F.1; sent even where none is required).
                        receive/request, authorization code flow (each changes one thing):
                          pkce-verifier-mismatch  the token request's code_verifier is a fresh one, not
                                                  the one whose S256 challenge went with the PAR
                          code-replay             the code is redeemed a second time after success; the
                                                  second answer is reported
                          dpop-wrong-htu          the token request's DPoP proof names the token endpoint
                                                  with /elsewhere appended as htu
                          dpop-wrong-htm          the token request's DPoP proof says htm GET for the POST
                          dpop-replayed-jti       the token request's DPoP proof reuses the jti of the
                                                  PAR request's proof
                          dpop-token-as-bearer    the credential request sends the DPoP-bound token as
                                                  Authorization: Bearer (its DPoP proof still sent)
                          attestation-untrusted-provider
                                                  the wallet attestation is signed by a freshly generated
                                                  wallet provider key (its own kid and iss)
                          attestation-pop-wrong-aud
                                                  the attestation PoP's aud is https://wrong-audience.invalid
                          authorization-wrong-redirect-uri
                                                  the token request's redirect_uri is the PAR's with
                                                  /elsewhere appended
                        present: vp-wrong-nonce, vp-wrong-aud, vp-foreign-key, tampered-credential,
                        untrusted-issuer (JWT VPs and ldp_vp), expired-session, access-denied,
                        ldp-undefined-term (ldp_vp only: a property no context defines, added after
                        signing, which a verifier in JSON-LD safe mode refuses); Presentation Exchange
                        only: vp-replayed (needs an earlier presentation in the same process, so not from
                        this CLI), revoked-credential, lying-submission; OpenID4VP 1.0 only:
                        sd-tampered-disclosure, sd-extra-disclosure, kb-wrong-sd-hash, kb-wrong-nonce,
                        kb-wrong-aud, kb-stale-iat, kb-missing (SD-JWT VC), plain-response (direct_post
                        although direct_post.jwt was asked), vp-token-wrong-id, kb-bad-signature,
                        kb-future-iat, sd-issuer-signature, jwe-wrong-key; mdoc-wrong-nonce,
                        mdoc-wrong-client-id, mdoc-wrong-response-uri, mdoc-tampered-element,
                        mdoc-extra-element, mdoc-foreign-device-key (mso_mdoc DeviceResponse).
                        dc-api: the 1.0 ones, and over the Digital Credentials API only
                        dc-api-foreign-origin (every presentation bound to https://attacker.example),
                        dc-api-client-id-audience (bound to the client_id as if not over the DC API; an
                        mdoc's redirect-flow handover), dc-api-wrong-request (another nonce),
                        dc-api-ignore-expected-origins (answers a signed request made for another origin).
  --origin ORIGIN       dc-api: the caller's origin as the browser reports it (https://host[:port])
  --request FILE        dc-api: the request JSON (default: read from stdin)
  -h, --help            show this text

Environment (used when the option is absent, by every command, so a runner can set them once for
\`vc-harness wallet open {link}\`):
  VC_HARNESS_WALLET         the wallet file (--wallet FILE)
  VC_HARNESS_TRUST_ANCHOR   PEM file(s) for --trust-anchor, several separated by "${delimiter}"

Progress goes to stderr. Exit codes: receive/request/present: 0 received (or pending with --no-wait) / presented (or
declined with access-denied, answered 2xx), 1 the flow failed; dc-api: 0 answered (presented, or declined
with access_denied), 1 refused (the error answer is printed) or failed; open: 0 received and accepted (or pending
with --no-wait) / presented, 1 refused (the wallet found a rule broken), declined (nothing held satisfies
the query) or failed; all: 2 bad arguments.`

/** Environment defaults of the options (see the usage text). */
export const WALLET_ENV = { wallet: 'VC_HARNESS_WALLET', trustAnchor: 'VC_HARNESS_TRUST_ANCHOR' } as const

/** --wallet, else VC_HARNESS_WALLET (an empty value counts as unset). */
function walletFile(option: string | undefined): string | undefined {
  return option ?? (process.env[WALLET_ENV.wallet] || undefined)
}

/** --trust-anchor (repeatable), else the files VC_HARNESS_TRUST_ANCHOR lists (path delimiter separated). */
function trustAnchorFiles(option: readonly string[] | undefined): { files: string[]; from: string } {
  if (option && option.length > 0) return { files: [...option], from: '--trust-anchor' }
  const files = (process.env[WALLET_ENV.trustAnchor] ?? '').split(delimiter).filter((f) => f.length > 0)
  return { files, from: WALLET_ENV.trustAnchor }
}

/** An argument error: main maps codes starting with ERR_PARSE_ARGS to exit code 2. */
function usageError(message: string): Error {
  return Object.assign(new TypeError(message), { code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' })
}

/** A failure whose message says everything: no stack trace on the console. */
function plainError(message: string): Error {
  const error = new Error(message)
  error.stack = message
  return error
}

async function credentialView(credential: StoredCredential) {
  // A selectively disclosing format (SD-JWT VC): every claim the holder could disclose (the stored view
  // drops the registered ones). Loaded on use: the CLI starts without the formats.
  const format = (await import('../formats/registry.ts')).formatOf(credential.format)
  const claims = format.selectiveDisclosure
    ? format.dcql
        .heldModel(credential.credential, credential.vct)
        .then((m) => (m && 'claims' in m ? m.claims : undefined))
    : undefined
  return {
    id: credential.id,
    format: credential.format,
    issuer: credential.issuer,
    // the key it is bound to: the holder's, or a further key of a batch (--batch)
    holder: credential.subject,
    types: credential.types,
    credentialSubject: credential.credentialSubject,
    ...(claims && { claims: await claims }),
    ...(credential.vct && { vct: credential.vct }),
    // an mdoc: its doctype and the element identifiers of each namespace (the values are credentialSubject)
    ...(credential.doctype && { doctype: credential.doctype }),
    ...(credential.format === 'mso_mdoc' && {
      namespaces: Object.fromEntries(
        Object.entries(credential.credentialSubject).map(([ns, elements]) => [
          ns,
          elements !== null && typeof elements === 'object' ? Object.keys(elements) : [],
        ]),
      ),
    }),
    ...(credential.issuedAt && { issuedAt: credential.issuedAt }),
    ...(credential.expiresAt && { expiresAt: credential.expiresAt }),
    credentialIssuer: credential.credentialIssuer,
    configurationId: credential.configurationId,
    receivedAt: credential.receivedAt,
    credential: credential.credential,
  }
}

/** The PEM files of --trust-anchor or VC_HARNESS_TRUST_ANCHOR, read (an unreadable file is an argument error). */
function readTrustAnchors(option: readonly string[] | undefined): string[] {
  const { files, from } = trustAnchorFiles(option)
  return files.map((file) => {
    try {
      return readFileSync(file, 'utf8')
    } catch (error) {
      throw usageError(`${from}: cannot read ${file}: ${(error as Error).message}`)
    }
  })
}

function progress(step: ReceiveStep, detail: unknown): void {
  const d = (detail ?? {}) as Record<string, unknown>
  const line: Record<ReceiveStep, () => string> = {
    offer: () => `offer: ${d.credential_issuer} offers ${JSON.stringify(d.credential_configuration_ids)}`,
    metadata: () => 'metadata: read',
    authorization: () =>
      `authorization: ${d.authorizationServer} authorized client ${d.clientId} (PAR request_uri ${d.requestUri}, ${d.via === 'user-step' ? 'after the user step' : 'redirected at once'}; iss ${d.iss ?? 'absent'})`,
    token: () => `token: ${d.token_type ?? 'access'} token, expires in ${d.expires_in ?? '?'} s`,
    credential: () =>
      d.retry
        ? `credential: ${d.status} ${d.error}: retrying once with a fresh nonce (${d.retry === 'c_nonce' ? "the error's c_nonce" : 'nonce endpoint'})`
        : d.status === 202
          ? `credential: deferred, transaction ${d.transactionId}, interval ${d.interval ?? '?'} s`
          : 'credential: issued',
    deferred: () => (d.status === 200 ? 'deferred: issued' : 'deferred: still pending'),
    verify: () =>
      `verify: signature and holder binding checked, stored${Array.isArray(detail) && detail.length > 1 ? ` (${detail.length} credentials)` : ''}`,
    notification: () => `notification: ${String(detail)} sent`,
  }
  console.error(line[step]())
}

/** The options of `receive` and `open`: one parse, one check of each, and the wallet they describe. */
const RECEIVE_OPTIONS = {
  wallet: { type: 'string' },
  'key-type': { type: 'string' },
  'tx-code': { type: 'string' },
  protocol: { type: 'string' },
  'no-wait': { type: 'boolean' },
  timeout: { type: 'string' },
  misbehave: { type: 'string', multiple: true },
  'trust-anchor': { type: 'string', multiple: true },
  share: { type: 'string', multiple: true },
  'ldp-proof-type': { type: 'string' },
  'http-timeout': { type: 'string' },
  'http-max-body': { type: 'string' },
  flow: { type: 'string' },
  'redirect-uri': { type: 'string' },
  'client-id': { type: 'string' },
  'wallet-provider-key': { type: 'string' },
  'wallet-provider-issuer': { type: 'string' },
  interactive: { type: 'boolean' },
  batch: { type: 'string' },
  'key-attestation': { type: 'boolean' },
  'proof-type': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const

/** The options of `request`: receive's (but --tx-code and --flow), the issuer and the configuration. */
const REQUEST_OPTIONS = (() => {
  const { 'tx-code': _, flow: __, ...rest } = RECEIVE_OPTIONS
  return { ...rest, issuer: { type: 'string' }, configuration: { type: 'string' } } as const
})()

/**
 * The user step of --interactive (AuthorizationOptions.userStep): the URL to open on stderr, the URL the
 * browser was sent back to from stdin.
 */
function promptUserStep(redirectUri: string): NonNullable<AuthorizationOptions['userStep']> {
  return async (authorizationUrl) => {
    console.error(
      `authorization: a person has to authorize. Open\n  ${authorizationUrl}\nin a browser, finish there, then paste the URL the browser was sent to (it starts with ${redirectUri}):`,
    )
    const prompt = createInterface({ input: process.stdin, output: process.stderr })
    try {
      return (await prompt.question('> ')).trim()
    } finally {
      prompt.close()
    }
  }
}

/** --redirect-uri, --client-id, --wallet-provider-key/-issuer and --interactive as AuthorizationOptions. */
function authorizationOptions(
  values: {
    'redirect-uri'?: string | undefined
    'client-id'?: string | undefined
    'wallet-provider-key'?: string | undefined
    'wallet-provider-issuer'?: string | undefined
    interactive?: boolean | undefined
  },
  fromJwk: (
    jwk: Record<string, unknown>,
    opts: { issuer?: string },
  ) => AuthorizationOptions['walletProvider'],
): AuthorizationOptions {
  const redirectUri = values['redirect-uri']
  if (redirectUri !== undefined && !URL.canParse(redirectUri))
    throw usageError(`--redirect-uri: not a URL: ${redirectUri}`)
  const keyFile = values['wallet-provider-key']
  const issuer = values['wallet-provider-issuer']
  if (issuer !== undefined && keyFile === undefined)
    throw usageError('--wallet-provider-issuer names the iss of --wallet-provider-key: give the key too')
  let walletProvider: AuthorizationOptions['walletProvider']
  if (keyFile !== undefined) {
    let jwk: unknown
    try {
      jwk = JSON.parse(readFileSync(keyFile, 'utf8'))
    } catch (error) {
      throw usageError(
        `--wallet-provider-key: cannot read a JSON JWK from ${keyFile}: ${(error as Error).message}`,
      )
    }
    if (jwk === null || typeof jwk !== 'object' || Array.isArray(jwk))
      throw usageError(`--wallet-provider-key: ${keyFile} holds no JWK object`)
    try {
      walletProvider = fromJwk(jwk as Record<string, unknown>, issuer !== undefined ? { issuer } : {})
    } catch (error) {
      throw usageError(`--wallet-provider-key: ${(error as Error).message}`)
    }
  }
  return {
    ...(redirectUri !== undefined && { redirectUri }),
    ...(values['client-id'] !== undefined && { clientId: values['client-id'] }),
    ...(walletProvider && { walletProvider }),
    ...(values.interactive && {
      userStep: promptUserStep(redirectUri ?? 'https://wallet.vc-harness.invalid/callback'),
    }),
  }
}

/** --http-timeout (seconds) and --http-max-body (bytes) as WalletOptions.http; absent: the defaults. */
function httpOptions(values: { 'http-timeout'?: string | undefined; 'http-max-body'?: string | undefined }) {
  const http: { timeoutMs?: number; maxBodyBytes?: number } = {}
  const timeout = values['http-timeout']
  if (timeout !== undefined) {
    const seconds = Number(timeout)
    if (!Number.isFinite(seconds) || seconds <= 0)
      throw usageError(`--http-timeout: not a positive number of seconds: ${timeout}`)
    http.timeoutMs = seconds * 1000
  }
  const max = values['http-max-body']
  if (max !== undefined) {
    if (!/^[1-9][0-9]*$/.test(max))
      throw usageError(`--http-max-body: not a positive number of bytes: ${max}`)
    http.maxBodyBytes = Number(max)
  }
  return http
}

/** --share (repeatable): 'all' alone, or credential ids, types or issuers; absent: nothing is shared. */
function shareOption(values: readonly string[] | undefined): 'all' | string[] | undefined {
  if (!values || values.length === 0) return undefined
  if (values.includes('all')) {
    if (values.length > 1) throw usageError('--share all allows everything: give it alone')
    return 'all'
  }
  return [...values]
}

async function parseReceiveLike(argv: string[], needsOne: string) {
  const { values, positionals } = parseArgs({
    args: argv,
    options: RECEIVE_OPTIONS,
    allowPositionals: true,
    strict: true,
  })
  if (values.help) return undefined
  if (positionals.length !== 1) throw usageError(needsOne)
  return parseIssuanceValues(values, positionals[0] as string)
}

/** What receive, open and request share: the wallet the options describe and how it takes part. */
async function parseIssuanceValues(
  values: ReturnType<typeof parseArgs<{ options: typeof RECEIVE_OPTIONS }>>['values'],
  link: string,
) {
  const keyType = values['key-type']
  const timeoutSeconds = values.timeout === undefined ? 600 : Number(values.timeout)
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0)
    throw usageError(`--timeout: not a positive number: ${values.timeout}`)
  const trustAnchors = readTrustAnchors(values['trust-anchor'])
  const http = httpOptions(values)
  const share = shareOption(values.share)
  const w = await import('../wallet/index.ts')
  if (keyType !== undefined && !w.HOLDER_KEY_TYPES.includes(keyType as HolderKeyType)) {
    throw usageError(`--key-type: expected one of ${w.HOLDER_KEY_TYPES.join(', ')}, got ${keyType}`)
  }
  const protocol = values.protocol
  if (protocol !== undefined && !w.ISSUANCE_PROTOCOLS.includes(protocol as IssuanceProtocol)) {
    throw usageError(`--protocol: expected one of ${w.ISSUANCE_PROTOCOLS.join(', ')}, got ${protocol}`)
  }
  const ldpProofType = ldpProofTypeOption(values['ldp-proof-type'], w.LD_PROOF_TYPES)
  const flow = values.flow
  if (flow !== undefined && !w.ISSUANCE_FLOWS.includes(flow as IssuanceFlow)) {
    throw usageError(`--flow: expected one of ${w.ISSUANCE_FLOWS.join(', ')}, got ${flow}`)
  }
  const authorization = authorizationOptions(values, w.walletProviderFromJwk)
  for (const m of values.misbehave ?? []) {
    if (w.isAuthorizationMisbehaviour(m) && values.protocol === 'draft15') {
      throw usageError(
        `--misbehave: ${m} belongs to the authorization code flow, which is spoken on the 1.0 path only (not --protocol draft15)`,
      )
    }
  }
  const batchValue = values.batch
  if (batchValue !== undefined && !/^[1-9][0-9]*$/.test(batchValue))
    throw usageError(`--batch: not a positive whole number of copies: ${batchValue}`)
  const proofType = values['proof-type']
  if (proofType !== undefined && !w.V1_PROOF_TYPES.includes(proofType as V1ProofType))
    throw usageError(`--proof-type: expected one of ${w.V1_PROOF_TYPES.join(', ')}, got ${proofType}`)
  if ((batchValue !== undefined || values['key-attestation'] || proofType) && protocol === 'draft15')
    throw usageError(
      '--batch, --key-attestation and --proof-type are spoken on the 1.0 path only (not --protocol draft15)',
    )
  const file = walletFile(values.wallet)
  return {
    values,
    link,
    w,
    file,
    share,
    /** --batch, --key-attestation, --proof-type as ReceiveOptions */
    proof: {
      ...(batchValue !== undefined && { batch: Number(batchValue) }),
      ...(values['key-attestation'] && { keyAttestation: true }),
      ...(proofType !== undefined && { proofType: proofType as V1ProofType }),
    },
    ...(flow !== undefined && { flow: flow as IssuanceFlow }),
    waitForDeferred: values['no-wait'] ? (false as const) : { timeoutMs: timeoutSeconds * 1000 },
    /** the wallet the options describe */
    create: () =>
      w.Wallet.create({
        ...(keyType !== undefined && { keyType: keyType as HolderKeyType }),
        ...(file !== undefined && { file }),
        ...(protocol !== undefined && { protocol: protocol as IssuanceProtocol }),
        ...(trustAnchors.length > 0 && { trustAnchors }),
        ...(ldpProofType !== undefined && { ldpProofType }),
        ...(Object.keys(authorization).length > 0 && { authorization }),
        http,
      }),
  }
}

/** --ldp-proof-type: a Linked Data proof type by name (whether the key makes it: Wallet.create). */
function ldpProofTypeOption(value: string | undefined, known: readonly string[]): string | undefined {
  if (value === undefined) return undefined
  if (!known.includes(value))
    throw usageError(`--ldp-proof-type: expected one of ${known.join(', ')}, got ${value}`)
  return value
}

async function receive(argv: string[]): Promise<void> {
  const parsed = await parseReceiveLike(
    argv,
    'receive needs exactly one argument: the credential offer deep link',
  )
  if (!parsed) {
    console.log(WALLET_USAGE)
    return
  }
  const { values, w } = parsed
  checkIssuanceMisbehaviours(values.misbehave, w)
  await printIssuance(w, parsed.create, (wallet) =>
    wallet.receive(parsed.link, {
      ...(values['tx-code'] !== undefined && { txCode: values['tx-code'] }),
      misbehave: (values.misbehave ?? []) as IssuanceMisbehaviour[],
      waitForDeferred: parsed.waitForDeferred,
      onStep: progress,
      ...(parsed.share && { share: parsed.share }),
      ...(parsed.flow && { flow: parsed.flow }),
      ...parsed.proof,
    }),
  )
}

/**
 * Opens the wallet, runs an issuance and prints what receive prints (the credentials, or the deferred
 * transaction); a wallet's refusal becomes the one-line error of exit code 1.
 */
async function printIssuance(
  w: typeof import('../wallet/index.ts'),
  create: () => Promise<Wallet>,
  run: (wallet: Wallet) => Promise<ReceiveResult>,
): Promise<void> {
  try {
    const wallet = await create()
    console.error(`holder: ${wallet.did} (${wallet.keyType}, wallet ${wallet.location})`)
    console.log(JSON.stringify(await receiveOutput(wallet, await run(wallet)), null, 2))
  } catch (error) {
    if (
      error instanceof w.WalletProtocolError ||
      error instanceof w.WalletUsageError ||
      error instanceof w.WalletFileError
    ) {
      throw plainError(error.message)
    }
    throw error
  }
}

/** --misbehave of receive and request: an issuance misbehaviour of either flow. */
function checkIssuanceMisbehaviours(
  values: readonly string[] | undefined,
  w: typeof import('../wallet/index.ts'),
): void {
  for (const m of values ?? []) {
    if (!w.isMisbehaviour(m) && !w.isAuthorizationMisbehaviour(m)) {
      const flow = w.isPresentationMisbehaviour(m)
        ? ' (a presentation misbehaviour: use it with present)'
        : ''
      throw usageError(
        `--misbehave: unknown ${m}${flow}; known: ${[...w.MISBEHAVIOURS, ...w.AUTHORIZATION_MISBEHAVIOURS].join(', ')}`,
      )
    }
  }
}

/**
 * `request --issuer URL --configuration ID`: wallet-initiated issuance (Wallet.request). Like receive: the
 * credentials on stdout, a refusal as the error (exit code 1).
 */
async function request(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args: argv, options: REQUEST_OPTIONS, strict: true })
  if (values.help) {
    console.log(WALLET_USAGE)
    return
  }
  if (positionals.length > 0) throw usageError('request takes no argument: give --issuer and --configuration')
  const issuer = values.issuer
  const configuration = values.configuration
  if (issuer === undefined || configuration === undefined)
    throw usageError(
      'request needs --issuer <credential issuer URL> and --configuration <credential_configuration_id>',
    )
  if (!URL.canParse(issuer)) throw usageError(`--issuer: not a URL: ${issuer}`)
  const parsed = await parseIssuanceValues(values, issuer)
  const { w } = parsed
  checkIssuanceMisbehaviours(values.misbehave, w)
  await printIssuance(w, parsed.create, (wallet) =>
    wallet.request(issuer, configuration, {
      misbehave: (values.misbehave ?? []) as IssuanceMisbehaviour[],
      waitForDeferred: parsed.waitForDeferred,
      onStep: progress,
      ...(parsed.share && { share: parsed.share }),
      ...parsed.proof,
    }),
  )
}

/** What receive prints: the credentials received, or the deferred transaction. */
async function receiveOutput(wallet: Wallet, result: ReceiveResult): Promise<Record<string, unknown>> {
  return result.status === 'issued'
    ? {
        status: 'issued',
        holder: wallet.did,
        credentials: await Promise.all(result.credentials.map(credentialView)),
        ...(result.notificationId && { notificationId: result.notificationId }),
      }
    : {
        status: 'pending',
        holder: wallet.did,
        transactionId: result.transactionId,
        ...(result.interval !== undefined && { interval: result.interval }),
      }
}

/** What present prints: the answer sent and the verifier's reply. */
function presentOutput(wallet: Wallet, result: PresentationResult): Record<string, unknown> {
  return {
    status: result.status,
    profile: result.profile,
    holder: wallet.did,
    sessionId: result.sessionId,
    clientId: result.clientId,
    responseUri: result.responseUri,
    ...(result.responseMode && { responseMode: result.responseMode }),
    ...(result.encryption && { encryption: result.encryption }),
    httpStatus: result.httpStatus,
    response: result.response,
    ...(result.redirectUri !== undefined && { redirectUri: result.redirectUri }),
    presented: result.presented,
    ...(result.presentationSubmission && { presentationSubmission: result.presentationSubmission }),
    // 1.0: the vp_token object keyed by credential query id; draft 20: the JWT VP
    ...(result.dcqlVpToken ? { vpToken: result.dcqlVpToken } : result.vpToken && { vpToken: result.vpToken }),
    // the wallet's own error answer (access_denied), when it declined
    ...(result.status === 'rejected-by-wallet' && {
      error: result.form.error,
      error_description: result.form.error_description,
    }),
  }
}

function presentProgress(step: PresentStep, detail: unknown): void {
  const d = (detail ?? {}) as Record<string, unknown>
  const line: Record<PresentStep, () => string> = {
    request: () =>
      d.profile === '1.0'
        ? `request: ${d.clientId} (client_id prefix ${d.prefix}, ${d.requestUriMethod ? `request_uri ${d.requestUriMethod}` : 'by value'}, ${d.signed ? 'signed' : 'unsigned'}) asks with DCQL for ${JSON.stringify(d.dcqlQueryIds)}, answer ${d.responseMode} to ${d.responseUri}`
        : `request: ${d.clientId} asks for presentation definition ${d.definitionId}, answer to ${d.responseUri}`,
    status: () => `status: ${d.lists} status list(s) read`,
    select: () => {
      if (d.replayed) return `select: replaying the previous presentation of ${JSON.stringify(d.replayed)}`
      if (d.unsatisfied) return `select: nothing held for ${JSON.stringify(d.unsatisfied)}: declining`
      if (d.dcql) {
        const chosen = d.dcql as { query: string; credential: string; claims: unknown[] }[]
        return `select: ${chosen.map((c) => `${c.query} ← ${c.credential} disclosing ${JSON.stringify(c.claims)}`).join(', ')}`
      }
      return `select: ${((d.chosen as { descriptor: string; credential: string }[]) ?? []).map((c) => `${c.descriptor} ← ${c.credential}`).join(', ')}`
    },
    response: () => `response: HTTP ${d.status}`,
  }
  console.error(line[step]())
}

async function present(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      wallet: { type: 'string' },
      misbehave: { type: 'string', multiple: true },
      'trust-anchor': { type: 'string', multiple: true },
      'decline-unsatisfied': { type: 'boolean' },
      'ldp-proof-type': { type: 'string' },
      'http-timeout': { type: 'string' },
      'http-max-body': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: true,
  })
  if (values.help) {
    console.log(WALLET_USAGE)
    return
  }
  if (positionals.length !== 1)
    throw usageError('present needs exactly one argument: the authorization request link')
  const trustAnchors = readTrustAnchors(values['trust-anchor'])
  const http = httpOptions(values)
  const file = walletFile(values.wallet)
  if (file !== undefined && !existsSync(file)) {
    throw plainError(`no wallet file at ${file} (receive a credential into it first)`)
  }
  const w = await import('../wallet/index.ts')
  const ldpProofType = ldpProofTypeOption(values['ldp-proof-type'], w.LD_PROOF_TYPES)
  for (const m of values.misbehave ?? []) {
    if (!w.isPresentationMisbehaviour(m)) {
      const flow = w.isMisbehaviour(m) ? ' (an issuance misbehaviour: use it with receive)' : ''
      throw usageError(
        `--misbehave: ${m} is not a presentation misbehaviour${flow}; known: ${w.PRESENTATION_MISBEHAVIOURS.join(', ')}`,
      )
    }
  }
  let wallet: Wallet | undefined
  try {
    wallet = await w.Wallet.create({
      ...(file !== undefined && { file }),
      ...(trustAnchors.length > 0 && { trustAnchors }),
      ...(ldpProofType !== undefined && { ldpProofType }),
      http,
    })
    console.error(`holder: ${wallet.did} (${wallet.keyType}, wallet ${wallet.location})`)
    const result = await wallet.present(positionals[0] as string, {
      misbehave: (values.misbehave ?? []) as PresentationMisbehaviour[],
      onStep: presentProgress,
      ...(values['decline-unsatisfied'] && { onUnsatisfied: 'access-denied' as const }),
    })
    console.log(JSON.stringify(presentOutput(wallet, result), null, 2))
  } catch (error) {
    if (error instanceof w.WalletProtocolError) {
      // the verifier's (or the wallet's) verdict is an outcome too: JSON on stdout, exit code 1
      const output = {
        status: 'failed',
        ...(wallet && { holder: wallet.did }),
        step: error.step,
        httpStatus: error.status,
        error: error.error,
        error_description: error.errorDescription,
      }
      console.log(JSON.stringify(output, null, 2))
      throw plainError(error.message)
    }
    if (error instanceof w.WalletUsageError || error instanceof w.WalletFileError) {
      throw plainError(error.message)
    }
    throw error
  }
}

/** The whole of stdin, as text. */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk))
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * `dc-api --origin O [--request FILE]`: a request over the Digital Credentials API answered as a platform
 * wallet answers it (Wallet.presentDcApi). The DigitalCredential `{protocol, data}` on stdout; a refusal is
 * the error answer a platform hands back (Appendix A.4) on stdout and exit code 1.
 */
async function dcApi(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      origin: { type: 'string' },
      request: { type: 'string' },
      wallet: { type: 'string' },
      misbehave: { type: 'string', multiple: true },
      'trust-anchor': { type: 'string', multiple: true },
      'decline-unsatisfied': { type: 'boolean' },
      'ldp-proof-type': { type: 'string' },
      'http-timeout': { type: 'string' },
      'http-max-body': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: true,
  })
  if (values.help) {
    console.log(WALLET_USAGE)
    return
  }
  if (positionals.length > 0)
    throw usageError('dc-api takes no argument: give --origin and --request (or stdin)')
  const origin = values.origin
  if (origin === undefined)
    throw usageError("dc-api needs --origin: the caller's origin, as the browser reports it")
  const { originProblem } = await import('../shared/dc-api.ts')
  const wrongOrigin = originProblem(origin)
  if (wrongOrigin !== undefined) throw usageError(`--origin: ${wrongOrigin}`)
  let text: string
  try {
    text = values.request !== undefined ? readFileSync(values.request, 'utf8') : await readStdin()
  } catch (error) {
    throw usageError(`--request: cannot read ${values.request}: ${(error as Error).message}`)
  }
  let request: unknown
  try {
    request = JSON.parse(text)
  } catch (error) {
    throw usageError(
      `${values.request !== undefined ? `--request ${values.request}` : 'stdin'}: not JSON: ${(error as Error).message}`,
    )
  }
  const trustAnchors = readTrustAnchors(values['trust-anchor'])
  const http = httpOptions(values)
  const file = walletFile(values.wallet)
  if (file !== undefined && !existsSync(file)) {
    throw plainError(`no wallet file at ${file} (receive a credential into it first)`)
  }
  const w = await import('../wallet/index.ts')
  const ldpProofType = ldpProofTypeOption(values['ldp-proof-type'], w.LD_PROOF_TYPES)
  for (const m of values.misbehave ?? []) {
    if (!w.isPresentationMisbehaviour(m)) {
      const flow = w.isMisbehaviour(m) ? ' (an issuance misbehaviour: use it with receive)' : ''
      throw usageError(
        `--misbehave: ${m} is not a presentation misbehaviour${flow}; known: ${w.PRESENTATION_MISBEHAVIOURS.join(', ')}`,
      )
    }
  }
  try {
    const wallet = await w.Wallet.create({
      ...(file !== undefined && { file }),
      ...(trustAnchors.length > 0 && { trustAnchors }),
      ...(ldpProofType !== undefined && { ldpProofType }),
      http,
    })
    console.error(`holder: ${wallet.did} (${wallet.keyType}, wallet ${wallet.location})`)
    const result = await wallet.presentDcApi(
      { request, origin },
      {
        misbehave: (values.misbehave ?? []) as PresentationMisbehaviour[],
        onStep: dcApiProgress,
        ...(values['decline-unsatisfied'] && { onUnsatisfied: 'access-denied' as const }),
      },
    )
    console.log(JSON.stringify(result.response, null, 2))
  } catch (error) {
    if (w.isDcApiRefusal(error)) {
      // the wallet's refusal is an answer too (Appendix A.4): the error answer on stdout, exit code 1
      console.log(JSON.stringify(w.dcApiErrorResponse(request, error), null, 2))
      throw plainError(error.message)
    }
    if (
      error instanceof w.WalletProtocolError ||
      error instanceof w.WalletUsageError ||
      error instanceof w.WalletFileError
    ) {
      throw plainError(error.message)
    }
    throw error
  }
}

function dcApiProgress(step: PresentStep, detail: unknown): void {
  const d = (detail ?? {}) as Record<string, unknown>
  if (step === 'request') {
    const signatures = (d.signatures ?? []) as {
      index: number
      clientId?: string
      verified: boolean
      reason?: string
    }[]
    console.error(
      `request: ${d.protocol} from ${d.origin}: client ${d.clientId} asks with DCQL for ${JSON.stringify(d.dcqlQueryIds)}, answer ${d.responseMode}`,
    )
    for (const s of signatures) {
      console.error(
        `  signatures[${s.index}] ${s.clientId ?? '(no client_id)'}: ${s.verified ? 'verified' : `not verified: ${s.reason}`}`,
      )
    }
    return
  }
  if (step === 'response') {
    console.error(
      `response: ${d.error ? `error ${d.error}` : `${d.responseMode}`} returned to the caller (${d.protocol})`,
    )
    return
  }
  presentProgress(step, detail)
}

/**
 * `open <link>`: what a wallet app does with whatever link it is shown (Wallet.open). Exit code 0 only when
 * the wallet received and accepted a credential, or presented; a refusal, a decline or a failure prints its
 * outcome as JSON and exits 1.
 */
async function open(argv: string[]): Promise<void> {
  const parsed = await parseReceiveLike(
    argv,
    'open needs exactly one argument: the link (credential offer or authorization request), quoted',
  )
  if (!parsed) {
    console.log(WALLET_USAGE)
    return
  }
  const { values, w, link, file } = parsed
  let kind: 'issuance' | 'presentation'
  try {
    kind = w.linkKind(link)
  } catch (error) {
    if (error instanceof w.WalletUsageError) throw usageError(error.message)
    throw error
  }
  for (const m of values.misbehave ?? []) {
    const fits =
      kind === 'issuance'
        ? w.isMisbehaviour(m) || w.isAuthorizationMisbehaviour(m)
        : w.isPresentationMisbehaviour(m)
    if (!fits) {
      throw usageError(
        `--misbehave: ${m} is not ${kind === 'issuance' ? 'an issuance' : 'a presentation'} misbehaviour, and the link is ${kind === 'issuance' ? 'a credential offer' : 'an authorization request'}`,
      )
    }
  }
  if (kind === 'presentation' && file !== undefined && !existsSync(file)) {
    console.log(
      JSON.stringify({ kind, status: 'failed', error_description: `no wallet file at ${file}` }, null, 2),
    )
    throw plainError(`no wallet file at ${file} (receive a credential into it first)`)
  }
  let wallet: Wallet | undefined
  try {
    wallet = await parsed.create()
    console.error(`holder: ${wallet.did} (${wallet.keyType}, wallet ${wallet.location})`)
    const opened = await wallet.open(link, {
      ...(values['tx-code'] !== undefined && { txCode: values['tx-code'] }),
      misbehave: (values.misbehave ?? []) as (IssuanceMisbehaviour | PresentationMisbehaviour)[],
      waitForDeferred: parsed.waitForDeferred,
      ...(parsed.share && { share: parsed.share }),
      ...(parsed.flow && { flow: parsed.flow }),
      ...parsed.proof,
      onStep: (step, detail) =>
        kind === 'issuance'
          ? progress(step as ReceiveStep, detail)
          : presentProgress(step as PresentStep, detail),
      onUnsatisfied: 'access-denied',
    })
    if (opened.kind === 'issuance') {
      console.log(JSON.stringify({ kind, ...(await receiveOutput(wallet, opened.result)) }, null, 2))
      return
    }
    console.log(JSON.stringify({ kind, ...presentOutput(wallet, opened.result) }, null, 2))
  } catch (error) {
    if (error instanceof w.PresentationDeclinedError && wallet) {
      // the wallet answered access_denied: the outcome, then exit code 1 (nothing was presented)
      console.log(JSON.stringify({ kind, ...presentOutput(wallet, error.result) }, null, 2))
      throw plainError(error.message)
    }
    const known =
      error instanceof w.WalletProtocolError ||
      error instanceof w.WalletUsageError ||
      error instanceof w.WalletFileError
    if (!known) throw error
    const output = {
      kind,
      status: 'failed',
      ...(wallet && { holder: wallet.did }),
      ...(error instanceof w.WalletProtocolError
        ? { step: error.step, httpStatus: error.status, error: error.error }
        : { error: error.name }),
      error_description: error instanceof w.WalletProtocolError ? error.errorDescription : error.message,
    }
    console.log(JSON.stringify(output, null, 2))
    throw plainError(error.message)
  }
}

async function list(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { wallet: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  })
  if (values.help) {
    console.log(WALLET_USAGE)
    return
  }
  const file = walletFile(values.wallet)
  if (file === undefined) throw usageError(`list needs --wallet FILE (or ${WALLET_ENV.wallet})`)
  if (!existsSync(file)) throw plainError(`no wallet file at ${file}`)
  const w = await import('../wallet/index.ts')
  let wallet: Wallet
  try {
    wallet = await w.Wallet.create({ file })
  } catch (error) {
    if (error instanceof w.WalletFileError) throw plainError(error.message)
    throw error
  }
  const output = {
    holder: { did: wallet.did, kid: wallet.kid, keyType: wallet.keyType },
    credentials: await Promise.all(wallet.credentials().map(credentialView)),
  }
  console.log(JSON.stringify(output, null, 2))
}

export async function wallet(argv: string[]): Promise<void> {
  const [command, ...rest] = argv
  if (command === '--help' || command === '-h' || command === 'help') {
    console.log(WALLET_USAGE)
    return
  }
  if (command === 'receive') return receive(rest)
  if (command === 'request') return request(rest)
  if (command === 'present') return present(rest)
  if (command === 'open') return open(rest)
  if (command === 'dc-api') return dcApi(rest)
  if (command === 'list') return list(rest)
  // The error alone, with the likely command: the usage is one --help away (issue 32: it buried the error).
  const { didYouMean } = await import('./suggest.ts')
  throw usageError(
    command === undefined
      ? 'missing command (receive, request, present, open, dc-api or list; see vc-harness wallet --help)'
      : `unknown command "${command}".${didYouMean(command, ['receive', 'request', 'present', 'open', 'dc-api', 'list'])} See vc-harness wallet --help.`,
  )
}
