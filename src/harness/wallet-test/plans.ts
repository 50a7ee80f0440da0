// The wallet test plans (docs/wallet-testing.md): each case opens one flow on its own tenant, with or without
// a deliberate fault of the service, hands the deep link to the wallet, and is judged on what the wallet did.
// Pure data: the runner (runner.ts) builds the service from it, the judge (judge.ts) reads `expect`.

import type { FormatId } from '../../formats/registry.ts'
import {
  type Fault,
  type IssuanceFault,
  PRESENTATION_FAULTS,
  type PresentationFault,
} from '../../service/faults/index.ts'
import type { DcApiRequestType } from '../../shared/dc-api.ts'
import { MDL_DOCTYPE, MDOC_FORMAT } from '../../shared/mdoc.ts'
import { SD_JWT_VC_TYP } from '../../shared/wire.ts'

export const PLAN_NAMES = [
  'issuance-draft15',
  'issuance-1.0',
  'issuance-mdoc',
  'issuance-haip',
  'presentation-pe',
  'presentation-pe-ldp',
  'presentation-dcql',
  'presentation-mdoc',
  'presentation-dc-api',
] as const
export type PlanName = (typeof PLAN_NAMES)[number]
/** What `--plan` accepts: a plan, or `all` (every plan in order). */
export type PlanChoice = PlanName | 'all'
export const PLAN_CHOICES: readonly PlanChoice[] = [...PLAN_NAMES, 'all']

export const PLAN_TITLES: Record<PlanName, string> = {
  'issuance-draft15': 'OpenID4VCI, draft 15 issuer metadata, jwt_vc_json',
  'issuance-1.0': 'OpenID4VCI 1.0 Final, SD-JWT VC (dc+sd-jwt)',
  'issuance-mdoc': 'OpenID4VCI 1.0 Final, ISO mdoc (mso_mdoc): an mDL under an IACA',
  'issuance-haip':
    'OpenID4VCI 1.0 Final as HAIP 1.0 profiles it: authorization code with PAR, PKCE, DPoP and wallet attestation, SD-JWT VC',
  'presentation-pe': 'OpenID4VP draft 20 with Presentation Exchange, jwt_vc_json',
  'presentation-pe-ldp':
    'OpenID4VP draft 20 with Presentation Exchange, ldp_vc in an ldp_vp (Linked Data proofs)',
  'presentation-dcql': 'OpenID4VP 1.0 Final with DCQL, SD-JWT VC, client identifier prefixes',
  'presentation-mdoc': 'OpenID4VP 1.0 Final with DCQL, ISO mdoc (mso_mdoc): a DeviceResponse of the mDL',
  'presentation-dc-api':
    'OpenID4VP 1.0 Final over the W3C Digital Credentials API (Appendix A): unsigned, signed and multi-signed requests, SD-JWT VC and ISO mdoc',
}

export type CredentialFormat = FormatId
export type ClientIdPrefix = 'decentralized_identifier' | 'x509_san_dns' | 'x509_hash' | 'redirect_uri'

export interface IssuanceFlow {
  kind: 'issuance'
  /** the issuer metadata's generation (FlowSetting.issuance) */
  generation: 'draft15' | '1.0'
  format: CredentialFormat
  /** the credential type offered (the presentation plans ask for the one their setup case issues) */
  credentialType: string
  /**
   * authorization_code: the offer carries only that grant (with an issuer_state); the wallet authorizes with
   * PAR, PKCE, DPoP and wallet attestation (HAIP 1.0 §4), the user step approved at once. Default: the
   * pre-authorized code.
   */
  grant?: 'pre-authorized_code' | 'authorization_code'
}

export interface PresentationFlow {
  kind: 'presentation'
  profile: 'pe' | 'dcql'
  format: CredentialFormat
  credentialType: string
  clientIdPrefix?: ClientIdPrefix
  responseMode?: 'direct_post' | 'direct_post.jwt'
  requestUriMethod?: 'get' | 'post'
  /**
   * OpenID4VP 1.0 Appendix A: the session is asked over the W3C Digital Credentials API instead of by its deep
   * link. The harness plays the browser: it fetches the request entry, hands it and the origin to the wallet,
   * and posts the wallet's answer to the verifier (the response mode is dc_api, or dc_api.jwt where
   * `responseMode` says direct_post.jwt). `request`: how the request is protected (A.3).
   */
  dcApi?: { request: DcApiRequestType }
}

/** Whether a case asks over the Digital Credentials API (it has no deep link a QR code could carry). */
export const isDcApiCase = (c: Pick<WalletCase, 'flow'>): boolean =>
  c.flow.kind === 'presentation' && c.flow.dcApi !== undefined

/**
 * What passes. `accept`: the wallet must complete the flow (credential verified and kept; presentation sent and
 * VERIFIED). `refuse`: the wallet must not complete it; refusing with an error (a credential_failure
 * notification, an error response to the verifier, a non-zero exit of the wallet command) and doing nothing
 * both pass.
 */
export type Expectation = 'accept' | 'refuse'

export interface WalletCase {
  /** stable id: the tenant's name and the JUnit test name */
  id: string
  plan: PlanName
  /** the requirement, as the reports name it */
  title: string
  flow: IssuanceFlow | PresentationFlow
  fault?: Fault
  expect: Expectation
  /** clause tags, as the conformance suite writes them */
  sources: string[]
  /** the broken rule, in words: the reason of a failure starts with it */
  rule?: string
  /** documented per case: which outcomes pass */
  passes: string
  /**
   * The fault shows in the deep link itself (an unknown client identifier prefix): a wallet may refuse
   * without fetching anything, so silence is no sign the case went untested.
   */
  visibleInLink?: boolean
}

/**
 * The presentation fault `name` when faults/index.ts lists it (PRESENTATION_FAULTS), else undefined: a plan
 * offers a case only for a fault the service can apply.
 */
function knownPresentationFault(name: string): PresentationFault | undefined {
  return (PRESENTATION_FAULTS as readonly string[]).includes(name) ? (name as PresentationFault) : undefined
}
/** faults/requests.ts DOCTYPE_MISMATCH (not imported: that module loads the formats). */
const DOCTYPE_MISMATCH = 'doctype-mismatch'

const REFUSE_ISSUANCE =
  'passes when the wallet does not keep the credential: a credential_failure (or credential_deleted) notification, a non-zero exit of the wallet command, or never asking for it; fails when it notifies credential_accepted, or the command exits 0 having received it'
const REFUSE_PRESENTATION =
  'passes when no vp_token reaches the verifier: an error response (access_denied, invalid_request, …) or nothing; fails when the wallet sends a presentation'
const ACCEPT_ISSUANCE =
  'passes when the wallet receives the credential and keeps it (credential_accepted, or the command exits 0 with no credential_failure); fails otherwise'
const ACCEPT_PRESENTATION =
  'passes when the wallet sends a presentation the verifier finds valid (session VERIFIED); fails on an error response, a rejected presentation or no answer'

/** What each credential-changing fault breaks, in the words and clauses of a format's own rules. */
interface FormatRule {
  title: string
  rule: string
  sources: string[]
}
interface FormatRules {
  foreignSignature: FormatRule
  otherHolder: FormatRule
  expired: FormatRule
  revoked: FormatRule
  /** the format's own tampering fault (a disclosure, an mdoc element) */
  tampered?: FormatRule & { fault: IssuanceFault }
}

function formatRules(format: CredentialFormat, v: string): FormatRules {
  if (format === SD_JWT_VC_TYP) {
    return {
      foreignSignature: {
        title: "The wallet refuses a credential that is not signed by the issuer's key",
        rule: "the credential's signature is made by a key that is not the issuer's",
        sources: [`@${v}-8.3`, '@SD-JWT-VC-3.5', '@RFC9901-7.1'],
      },
      otherHolder: {
        title: "The wallet refuses a credential bound to another holder's key",
        rule: "the credential's cnf key is not the key the wallet proved",
        sources: [`@${v}-8.2`, '@SD-JWT-VC-3.2.2.2'],
      },
      tampered: {
        fault: 'sd-jwt-tampered-disclosure',
        title: 'The wallet refuses an SD-JWT VC with a disclosure whose digest is not in the credential',
        rule: 'a disclosure of the SD-JWT does not match any digest the issuer signed',
        sources: ['@RFC9901-7.1', '@RFC9901-7.3'],
      },
      expired: {
        title: 'The wallet refuses a credential that has already expired',
        rule: "the credential's expiry (exp / validUntil) is in the past",
        sources: ['@RFC9901-7.1', '@SD-JWT-VC-3.2.2.2'],
      },
      revoked: {
        title: 'The wallet refuses a credential whose status is already revoked',
        rule: "the credential's status list entry says revoked when it is handed out",
        sources: ['@TokenStatusList-8.3', '@SD-JWT-VC-3.2.2.2'],
      },
    }
  }
  if (format === MDOC_FORMAT) {
    // ISO/IEC 18013-5 §9.3.1: the issuer data authentication a reader (and a wallet at receipt) performs.
    return {
      foreignSignature: {
        title: 'The wallet refuses an mdoc whose MSO is signed by a document signer outside the IACA',
        rule: "an MSO signed by a DS certificate outside the IACA: issuerAuth's x5chain does not lead to the issuer's IACA root",
        sources: [`@${v}-A.2`, '@ISO18013-5-9.3.1', '@ISO18013-5-B.1.4'],
      },
      otherHolder: {
        title: 'The wallet refuses an mdoc bound to another device key',
        rule: "the MSO's deviceKeyInfo.deviceKey is not the key the wallet proved",
        sources: [`@${v}-8.2`, `@${v}-A.2`, '@ISO18013-5-9.1.2.4'],
      },
      tampered: {
        fault: 'mdoc-digest-mismatch',
        title: 'The wallet refuses an mdoc with an element that does not match its digest in the MSO',
        rule: "a digest mismatch: an element's value was changed after signing, so its digest is not the one the MSO's valueDigests hold",
        sources: ['@ISO18013-5-9.3.1', '@ISO18013-5-9.1.2.4'],
      },
      expired: {
        title: 'The wallet refuses an mdoc that has already expired',
        rule: "the MSO's validityInfo.validUntil is in the past",
        sources: ['@ISO18013-5-9.1.2.4', '@ISO18013-5-9.3.1'],
      },
      revoked: {
        title: 'The wallet refuses an mdoc whose status is already revoked',
        rule: "the MSO's status list entry says revoked when it is handed out",
        sources: ['@TokenStatusList-6.3', '@TokenStatusList-8.3'],
      },
    }
  }
  return {
    foreignSignature: {
      title: "The wallet refuses a credential that is not signed by the issuer's key",
      rule: "the credential's signature is made by a key that is not the issuer's",
      sources: [`@${v}-8.3`, '@VC-JOSE-COSE-3.1'],
    },
    otherHolder: {
      title: "The wallet refuses a credential bound to another holder's key",
      rule: "the credential's subject is another DID than the wallet's",
      sources: [`@${v}-8.2`, '@VC-DM-4.4'],
    },
    expired: {
      title: 'The wallet refuses a credential that has already expired',
      rule: "the credential's expiry (exp / validUntil) is in the past",
      sources: ['@VC-DM-4.9', '@VC-JOSE-COSE-3.1'],
    },
    revoked: {
      title: 'The wallet refuses a credential whose status is already revoked',
      rule: "the credential's status list entry says revoked when it is handed out",
      sources: ['@BitstringStatusList-3.2'],
    },
  }
}

function issuanceCases(plan: PlanName, generation: 'draft15' | '1.0', format: CredentialFormat) {
  const v = generation === '1.0' ? 'OID4VCI-1.0' : 'OID4VCI-draft15'
  const mdoc = format === MDOC_FORMAT
  // An mdoc's credential type is its doctype: the mDL.
  const credentialType = mdoc ? MDL_DOCTYPE : 'VerifiableId'
  const flow: IssuanceFlow = { kind: 'issuance', generation, format, credentialType }
  // The rules a wallet breaks differ per format (their sources: SD-JWT VC and RFC 9901, ISO 18013-5, or VC JOSE/DM).
  const rules = formatRules(format, v)
  const negative = (
    fault: IssuanceFault,
    { title, rule, sources }: FormatRule,
    passes = REFUSE_ISSUANCE,
  ): WalletCase => ({
    id: `${plan}:${fault}`,
    plan,
    title,
    flow,
    fault,
    expect: 'refuse',
    sources,
    rule,
    passes,
  })
  const cases: WalletCase[] = [
    {
      id: `${plan}:positive`,
      plan,
      title: mdoc
        ? `The wallet receives and keeps a valid ${format} credential (an mDL whose issuerAuth chains to the IACA)`
        : `The wallet receives and keeps a valid ${format} credential`,
      flow,
      expect: 'accept',
      sources: mdoc ? [`@${v}-8.3`, `@${v}-A.2`, '@ISO18013-5-9.3.1'] : [`@${v}-8.3`, `@${v}-10`],
      passes: ACCEPT_ISSUANCE,
    },
    negative(
      'metadata-issuer-mismatch',
      {
        title: 'The wallet does not use issuer metadata whose credential_issuer differs from the offer',
        rule: "the issuer metadata's credential_issuer is not the offer's credential_issuer",
        sources: [`@${v}-12.2.2`],
      },
      'passes when the wallet stops before redeeming the pre-authorized code (the metadata MUST NOT be used); fails when it goes on to the token endpoint',
    ),
    negative('credential-foreign-signature', rules.foreignSignature),
    negative('credential-other-holder', rules.otherHolder),
    ...(rules.tampered ? [negative(rules.tampered.fault, rules.tampered)] : []),
    negative('credential-expired', rules.expired),
    negative('credential-revoked', rules.revoked),
  ]
  if (generation === 'draft15') {
    cases.push({
      id: `${plan}:token-without-c-nonce`,
      plan,
      title: 'Without a c_nonce in the token answer, the wallet fetches one from the nonce endpoint',
      flow,
      fault: 'token-without-c-nonce',
      expect: 'accept',
      sources: [`@${v}-7`, `@${v}-8.2`, `@${v}-8.3.1.2`],
      rule: 'the token answer carries no c_nonce; the nonce endpoint (or the invalid_nonce error) gives one',
      passes:
        'passes when the wallet obtains the credential with a key proof carrying a nonce the issuer gave (nonce endpoint, or the c_nonce of an invalid_nonce error) and keeps it; fails when it sends a proof without a nonce and gives up, or gets nothing',
    })
  }
  return cases
}

/**
 * The presentation cases of a profile. `pe` asks for a jwt_vc_json credential, `pe-ldp` for an ldp_vc (the
 * interface's section 2.8 `ldp` / `ldp_vp`: the wallet answers with a Linked Data presentation whose proof
 * carries the request's nonce as challenge and its client_id as domain), `dcql` for an SD-JWT VC, `mdoc` for
 * an ISO mdoc (the mDL, OpenID4VP 1.0 Appendix B.2: a DeviceResponse whose device signature covers the
 * SessionTranscript of the request's client_id, nonce and response_uri).
 */
function presentationCases(plan: PlanName, profile: 'pe' | 'pe-ldp' | 'dcql' | 'mdoc'): WalletCase[] {
  const pe = profile === 'pe' || profile === 'pe-ldp'
  const ldp = profile === 'pe-ldp'
  const mdoc = profile === 'mdoc'
  const format: CredentialFormat = ldp ? 'ldp_vc' : pe ? 'jwt_vc_json' : mdoc ? MDOC_FORMAT : SD_JWT_VC_TYP
  // A type no other plan issues: format-not-offered asks for it as jwt_vc_json, which the wallet must not hold
  // (under plan all it holds VerifiableId in both formats); the ldp_vc plan's type is its own, so that under
  // plan all the wallet's only credential of it is the ldp_vc. An mdoc's type is its doctype: the mDL.
  const credentialType = ldp
    ? 'PermanentResidentCard'
    : pe
      ? 'VerifiableId'
      : mdoc
        ? MDL_DOCTYPE
        : 'PersonIdentificationData'
  const v = pe ? 'OID4VP-draft20' : 'OID4VP-1.0'
  // The wallet needs the credential the verifier asks for: the plan issues it first (itself a judged case).
  const setup: WalletCase = {
    id: `${plan}:setup`,
    plan,
    title: mdoc
      ? `The wallet receives the ${format} mDL (${credentialType}) the presentation cases ask for`
      : `The wallet receives the ${format} ${credentialType} the presentation cases ask for`,
    flow: {
      kind: 'issuance',
      generation: pe ? 'draft15' : '1.0',
      format,
      credentialType,
    },
    expect: 'accept',
    sources: ldp
      ? ['@OID4VCI-draft15-8.3', '@OID4VCI-1.0-A.1.2']
      : mdoc
        ? ['@OID4VCI-1.0-8.3', '@OID4VCI-1.0-A.2']
        : [pe ? '@OID4VCI-draft15-8.3' : '@OID4VCI-1.0-8.3'],
    passes: ACCEPT_ISSUANCE,
  }
  const base: PresentationFlow = {
    kind: 'presentation',
    profile: pe ? 'pe' : 'dcql',
    format,
    credentialType,
    ...(pe
      ? {}
      : { clientIdPrefix: 'decentralized_identifier' as const, responseMode: 'direct_post' as const }),
  }
  const positive = (suffix: string, title: string, flow: Partial<PresentationFlow>, sources: string[]) => ({
    id: `${plan}:${suffix}`,
    plan,
    title,
    flow: { ...base, ...flow },
    expect: 'accept' as const,
    sources,
    passes: ACCEPT_PRESENTATION,
  })
  const negative = (
    fault: PresentationFault,
    title: string,
    rule: string,
    sources: string[],
    flow: Partial<PresentationFlow> = {},
    suffix: string = fault,
  ): WalletCase => ({
    id: `${plan}:${suffix}`,
    plan,
    title,
    flow: { ...base, ...flow },
    fault,
    expect: 'refuse',
    sources,
    rule,
    passes: REFUSE_PRESENTATION,
  })
  const x509Dns = { clientIdPrefix: 'x509_san_dns' as const, responseMode: 'direct_post.jwt' as const }
  // HAIP's variant of an mdoc request: x509_hash and an encrypted response
  const x509HashJwt = { clientIdPrefix: 'x509_hash' as const, responseMode: 'direct_post.jwt' as const }
  const cases: WalletCase[] = [setup]
  // A positive case first: 'nonce-reused' replays the nonce of the last request a wallet answered.
  if (ldp) {
    cases.push(
      positive(
        'positive',
        'The wallet answers a valid request with a valid ldp_vp (challenge = nonce, domain = client_id)',
        {},
        [`@${v}-5`, `@${v}-6.2`, '@PEX-2.0-8', '@VC-DATA-INTEGRITY-2.1', '@interface-2.8'],
      ),
    )
  } else if (pe) {
    cases.push(
      positive('positive', 'The wallet answers a valid request with a valid presentation', {}, [
        `@${v}-5`,
        `@${v}-6.2`,
        '@PEX-2.0-8',
      ]),
    )
  } else if (mdoc) {
    // OpenID4VP 1.0 Appendix B.2.6: the vp_token entry is a DeviceResponse; B.2.6.1: its SessionTranscript
    // (OpenID4VPHandover) binds client_id, nonce, the response encryption key's thumbprint and response_uri.
    cases.push(
      positive(
        'positive',
        'The wallet answers a valid request with a DeviceResponse of the mDL (decentralized_identifier, direct_post)',
        {},
        [`@${v}-B.2.6`, `@${v}-B.2.6.1`, '@ISO18013-5-8.3.2.1.2.2', '@ISO18013-5-9.1.3.6'],
      ),
      positive(
        'positive-x509-hash-jwt',
        'The wallet answers a valid request with a DeviceResponse of the mDL (x509_hash, direct_post.jwt)',
        x509HashJwt,
        [`@${v}-B.2.6.1`, `@${v}-5.9.3`, `@${v}-8.3`, '@HAIP-5'],
      ),
    )
  } else {
    cases.push(
      positive('positive', 'The wallet answers a valid request (decentralized_identifier, direct_post)', {}, [
        `@${v}-5.9.3`,
        `@${v}-6`,
        `@${v}-8.2`,
      ]),
      positive(
        'positive-x509-san-dns-jwt',
        'The wallet answers a valid request (x509_san_dns, direct_post.jwt)',
        x509Dns,
        [`@${v}-5.9.3`, `@${v}-8.3`, '@HAIP-5'],
      ),
      positive(
        'positive-x509-hash-post',
        'The wallet answers a valid request (x509_hash, request_uri_method post)',
        { clientIdPrefix: 'x509_hash', requestUriMethod: 'post' },
        [`@${v}-5.9.3`, `@${v}-5.10`],
      ),
      positive(
        'positive-redirect-uri',
        'The wallet answers a valid unsigned request (redirect_uri)',
        { clientIdPrefix: 'redirect_uri' },
        [`@${v}-5.9.3`],
      ),
    )
  }
  cases.push(
    negative(
      'request-foreign-signature',
      "The wallet refuses a request object not signed by the client's key",
      "the request object's signature is made by a key that is not the client's",
      [`@${v}-5.9.3`, '@RFC9101-6.2'],
      pe ? {} : mdoc ? x509HashJwt : x509Dns,
    ),
    negative(
      'client-id-mismatch',
      "The wallet refuses a request object whose client_id differs from the link's",
      "the request object's client_id is not the client_id of the authorization request",
      [`@${v}-5.10`, '@RFC9101-5'],
    ),
    negative(
      'nonce-missing',
      'The wallet refuses a request without a nonce',
      'the request object carries no nonce',
      [`@${v}-5.2`, `@${v}-14.1`],
    ),
    negative(
      'nonce-reused',
      'The wallet refuses a request that reuses the nonce of a request it already answered',
      'the request reuses the nonce of a request this wallet already answered',
      [`@${v}-14.1`],
    ),
    negative(
      'request-expired',
      'The wallet refuses an expired request object',
      "the request object's exp is in the past",
      ['@RFC9101-6.3', '@RFC7519-4.1.4'],
    ),
  )
  if (!pe && !mdoc) {
    cases.push(
      negative(
        'response-uri-foreign-origin',
        'The wallet refuses a response_uri on another origin than the x509_san_dns client identifier allows',
        "the response_uri's origin is not the one the x509_san_dns client identifier names",
        [`@${v}-5.9.3`],
        x509Dns,
        'response-uri-foreign-origin-x509-san-dns',
      ),
      negative(
        'response-uri-foreign-origin',
        'The wallet refuses a response_uri that is not the redirect_uri client identifier',
        'the response_uri is not the redirect_uri the client identifier names',
        [`@${v}-5.9.3`],
        { clientIdPrefix: 'redirect_uri' },
        'response-uri-foreign-origin-redirect-uri',
      ),
      {
        ...negative(
          'unknown-client-id-prefix',
          'The wallet refuses a client identifier with an unknown prefix',
          'the client_id carries a client identifier prefix no specification defines',
          [`@${v}-5.9.1`, `@${v}-5.9.2`],
        ),
        visibleInLink: true,
      },
    )
  }
  cases.push(
    negative(
      'query-unsatisfiable',
      pe
        ? 'The wallet sends nothing for a presentation definition it cannot satisfy'
        : 'The wallet sends nothing for a DCQL query it cannot satisfy',
      'the query asks for a credential the wallet does not hold',
      pe
        ? [`@${v}-6.4`, '@PEX-2.0-5']
        : mdoc
          ? [`@${v}-6.4.2`, `@${v}-8.5`, `@${v}-B.2.3`]
          : [`@${v}-6.4.2`, `@${v}-8.5`],
    ),
  )
  // doctype-mismatch (faults/requests.ts): the mDL's own elements asked for under another doctype_value.
  const doctypeMismatch = knownPresentationFault(DOCTYPE_MISMATCH)
  if (mdoc && doctypeMismatch) {
    cases.push(
      negative(
        doctypeMismatch,
        'The wallet does not answer a query for another doctype with its mDL, although the elements match',
        "the query asks for the mDL's elements under another doctype_value than the held mDL's",
        [`@${v}-B.2.3`, `@${v}-6.4.2`, '@ISO18013-5-8.3.2.1.2.1'],
      ),
    )
  }
  // format-not-offered narrows a definition to the Linked Data formats (faults/requests.ts): a fault for a
  // held JWT credential only. The ldp_vc plan would need the opposite (a definition asking for jwt formats);
  // the mdoc plan has its own mismatch, doctype-mismatch.
  if (!ldp && !mdoc) {
    cases.push(
      negative(
        'format-not-offered',
        'The wallet does not present a credential in another format than the request asks for',
        'the request asks for the held credential in another format than the one it was issued in',
        pe ? [`@${v}-5.1`, '@PEX-2.0-5.1'] : [`@${v}-6.1`, `@${v}-B.1`],
      ),
    )
  }
  return cases
}

/**
 * The HAIP issuance plan (the OpenID Foundation's HAIP wallet modules for issuance): an SD-JWT VC offered
 * with only the authorization_code grant. The wallet meets a faulty authorization response (RFC 9207 iss
 * missing or another issuer's, another state) and metadata that does not require PAR; DPoP nonces are
 * required throughout (the positive case proves the wallet retries with the server's nonce).
 */
function haipIssuanceCases(): WalletCase[] {
  const plan: PlanName = 'issuance-haip'
  const flow: IssuanceFlow = {
    kind: 'issuance',
    generation: '1.0',
    format: SD_JWT_VC_TYP,
    credentialType: 'VerifiableId',
    grant: 'authorization_code',
  }
  const STOPS =
    'passes when the wallet does not redeem the code at the token endpoint (the response MUST be discarded); fails when it asks for a token with it'
  const negative = (fault: IssuanceFault, title: string, rule: string, sources: string[]): WalletCase => ({
    id: `${plan}:${fault}`,
    plan,
    title,
    flow,
    fault,
    expect: 'refuse',
    sources,
    rule,
    passes: STOPS,
  })
  return [
    {
      id: `${plan}:positive`,
      plan,
      title:
        'The wallet obtains and keeps an SD-JWT VC through PAR, PKCE, a DPoP-bound token (retrying with the server nonce) and wallet attestation',
      flow,
      expect: 'accept',
      sources: [
        '@HAIP-1.0-4.1',
        '@RFC9126-2',
        '@RFC7636-4.3',
        '@RFC9449-8',
        '@OAuth-Attestation-6.1',
        '@OID4VCI-1.0-5.1',
      ],
      passes: ACCEPT_ISSUANCE,
    },
    {
      id: `${plan}:par-not-required`,
      plan,
      title:
        'The wallet completes issuance when the metadata does not require PAR (HAIP wallets push anyway)',
      flow,
      fault: 'par-not-required',
      expect: 'accept',
      sources: ['@HAIP-1.0-4.1', '@RFC9126-5'],
      rule: 'the authorization server metadata says require_pushed_authorization_requests: false',
      passes: ACCEPT_ISSUANCE,
    },
    negative(
      'authorization-response-without-iss',
      'The wallet discards an authorization response without iss when the metadata announces it',
      'the authorization response carries code and state but no iss, though authorization_response_iss_parameter_supported is true',
      ['@RFC9207-2.4', '@HAIP-1.0-4.1'],
    ),
    negative(
      'authorization-response-wrong-iss',
      "The wallet discards an authorization response whose iss is another issuer's (mix-up)",
      "the authorization response's iss is not the authorization server's issuer identifier",
      ['@RFC9207-2.4', '@RFC9700-4.4'],
    ),
    negative(
      'authorization-response-wrong-state',
      'The wallet discards an authorization response whose state is not the one it sent',
      "the authorization response's state differs from the authorization request's",
      ['@RFC6749-4.1.2', '@RFC6749-10.12'],
    ),
  ]
}

const REFUSE_DC_API =
  'passes when no vp_token reaches the verifier: the wallet answers an error through the API (the harness posts it), exits non-zero, or answers nothing; fails when it answers with a presentation'
const ACCEPT_DC_API =
  'passes when the wallet answers through the API with a presentation bound to the origin that the verifier finds valid (session VERIFIED); fails on an error answer, a rejected presentation or no answer'

/**
 * The plan over the W3C Digital Credentials API (OpenID4VP 1.0 Appendix A). The harness plays the browser and
 * platform: it fetches the case's request entry (`{protocol, data}`), hands it with the origin of the relying
 * party's page (the session's first expected origin: the service's own) to the wallet, and posts what the
 * wallet answers, with that origin, to the verifier, which judges it as it would a direct_post. Two setup
 * cases: the SD-JWT VC most cases ask for, and the mDL of HAIP's DC API variant.
 */
function dcApiCases(): WalletCase[] {
  const plan: PlanName = 'presentation-dc-api'
  const v = 'OID4VP-1.0'
  const sdJwt = { format: SD_JWT_VC_TYP, credentialType: 'PersonIdentificationData' } as const
  const mdl = { format: MDOC_FORMAT, credentialType: MDL_DOCTYPE } as const
  const setup = (suffix: string, what: typeof sdJwt | typeof mdl, title: string, sources: string[]) => ({
    id: `${plan}:${suffix}`,
    plan,
    title,
    flow: { kind: 'issuance' as const, generation: '1.0' as const, ...what },
    expect: 'accept' as const,
    sources,
    passes: ACCEPT_ISSUANCE,
  })
  type Ask = { request: DcApiRequestType; prefix: ClientIdPrefix; jwt?: boolean; mdoc?: boolean }
  const flowOf = ({ request, prefix, jwt, mdoc }: Ask): PresentationFlow => ({
    kind: 'presentation',
    profile: 'dcql',
    ...(mdoc ? mdl : sdJwt),
    clientIdPrefix: prefix,
    responseMode: jwt ? 'direct_post.jwt' : 'direct_post',
    dcApi: { request },
  })
  const positive = (suffix: string, title: string, ask: Ask, sources: string[]): WalletCase => ({
    id: `${plan}:${suffix}`,
    plan,
    title,
    flow: flowOf(ask),
    expect: 'accept',
    sources,
    passes: ACCEPT_DC_API,
  })
  const negative = (
    suffix: string,
    fault: PresentationFault,
    title: string,
    rule: string,
    ask: Ask,
    sources: string[],
  ): WalletCase => ({
    id: `${plan}:${suffix}`,
    plan,
    title,
    flow: flowOf(ask),
    fault,
    expect: 'refuse',
    sources,
    rule,
    passes: REFUSE_DC_API,
  })
  const signedHash: Ask = { request: 'signed', prefix: 'x509_hash' }
  const multisigned: Ask = { request: 'multisigned', prefix: 'x509_hash' }
  const cases: WalletCase[] = [
    setup(
      'setup',
      sdJwt,
      'The wallet receives the dc+sd-jwt PersonIdentificationData the DC API cases ask for',
      ['@OID4VCI-1.0-8.3'],
    ),
    setup('setup-mdoc', mdl, 'The wallet receives the mso_mdoc mDL the mdoc case over the DC API asks for', [
      '@OID4VCI-1.0-8.3',
      '@OID4VCI-1.0-A.2',
    ]),
    positive(
      'positive-unsigned',
      'The wallet answers an unsigned request over the DC API, its presentation bound to the origin (dc_api)',
      { request: 'unsigned', prefix: 'decentralized_identifier' },
      [`@${v}-A.1`, `@${v}-A.2`, `@${v}-A.3.1`, `@${v}-A.4`],
    ),
    positive(
      'positive-signed-x509-hash',
      'The wallet answers a signed request over the DC API (x509_hash, expected_origins holding the origin; dc_api)',
      signedHash,
      [`@${v}-A.2`, `@${v}-A.3.1`, `@${v}-A.4`, `@${v}-5.9.3`],
    ),
    positive(
      'positive-unsigned-jwt',
      'The wallet answers an unsigned request over the DC API with an encrypted response (dc_api.jwt)',
      { request: 'unsigned', prefix: 'decentralized_identifier', jwt: true },
      [`@${v}-A.2`, `@${v}-A.3.1`, `@${v}-A.4`, `@${v}-8.3`],
    ),
    positive(
      'positive-multisigned',
      'The wallet answers a multi-signed request over the DC API (x509_hash and decentralized_identifier signatures; dc_api.jwt)',
      { ...multisigned, jwt: true },
      [`@${v}-A.3.2`, `@${v}-A.4`, `@${v}-8.3`],
    ),
    positive(
      'positive-signed-jwt',
      'The wallet answers a signed request over the DC API with an encrypted response (x509_hash, dc_api.jwt)',
      { ...signedHash, jwt: true },
      [`@${v}-A.2`, `@${v}-A.4`, `@${v}-8.3`],
    ),
    positive(
      'positive-mdoc',
      "The wallet answers a signed request for the mDL over the DC API with a DeviceResponse bound to the origin (x509_hash, dc_api.jwt: HAIP's DC API variant)",
      { ...signedHash, jwt: true, mdoc: true },
      [`@${v}-A.4`, `@${v}-B.2.6.2`, '@HAIP-5'],
    ),
    {
      ...positive(
        'multisigned-one-invalid-signature',
        'The wallet answers a multi-signed request of which one signature is invalid and another valid',
        multisigned,
        [`@${v}-A.3.2`],
      ),
      fault: 'dc-api-multisigned-one-invalid-signature',
      rule: 'the first signature of the multi-signed request does not verify; the second, under a prefix the wallet verifies, does',
    },
    negative(
      'multisigned-all-invalid',
      'dc-api-multisigned-all-invalid',
      'The wallet refuses a multi-signed request none of whose signatures verifies',
      'no signature of the multi-signed request verifies',
      multisigned,
      [`@${v}-A.3.2`, '@RFC7515-7.2.1'],
    ),
    negative(
      'wrong-expected-origins',
      'dc-api-wrong-expected-origins',
      "The wallet refuses a signed request whose expected_origins leave out the caller's origin",
      `the signed request's expected_origins are ["https://wrong.example.com"], which do not hold the calling origin`,
      signedHash,
      [`@${v}-A.2`, `@${v}-A.4`],
    ),
    negative(
      'expected-origins-missing',
      'dc-api-expected-origins-missing',
      'The wallet refuses a signed request without expected_origins',
      'the signed request carries no expected_origins (REQUIRED when the request is signed)',
      signedHash,
      [`@${v}-A.2`],
    ),
    negative(
      'request-foreign-signature',
      'request-foreign-signature',
      "The wallet refuses a signed request over the DC API not signed by the client's key",
      "the signed request's signature is made by a key that is not the one its x5c chain certifies",
      signedHash,
      [`@${v}-A.3.1`, `@${v}-5.9.3`, '@RFC9101-6.2'],
    ),
  ]
  return cases
}

const PLANS: Record<PlanName, () => WalletCase[]> = {
  'issuance-haip': haipIssuanceCases,
  'issuance-draft15': () => issuanceCases('issuance-draft15', 'draft15', 'jwt_vc_json'),
  'issuance-1.0': () => issuanceCases('issuance-1.0', '1.0', SD_JWT_VC_TYP),
  'presentation-pe': () => presentationCases('presentation-pe', 'pe'),
  'presentation-pe-ldp': () => presentationCases('presentation-pe-ldp', 'pe-ldp'),
  'presentation-dcql': () => presentationCases('presentation-dcql', 'dcql'),
  'issuance-mdoc': () => issuanceCases('issuance-mdoc', '1.0', MDOC_FORMAT),
  'presentation-mdoc': () => presentationCases('presentation-mdoc', 'mdoc'),
  'presentation-dc-api': dcApiCases,
}

/** The cases of a plan (`all`: every plan, in PLAN_NAMES order). */
export function planCases(choice: PlanChoice): WalletCase[] {
  const names = choice === 'all' ? PLAN_NAMES : [choice]
  return names.flatMap((name) => PLANS[name]())
}

export const isPlanChoice = (value: string): value is PlanChoice =>
  (PLAN_CHOICES as readonly string[]).includes(value)

/** The tenant a case runs on: ids are `[a-z0-9-]`, so the case id is made one. */
export function tenantOf(testCase: WalletCase): string {
  return `wt-${testCase.id.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}`.slice(0, 63)
}
