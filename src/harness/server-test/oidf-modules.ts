// The OpenID Foundation conformance suite's OpenID4VCI 1.0 / OpenID4VP 1.0 test plans, module by module, and
// what of vc-harness covers each: a case of the issuer or verifier test plans (plans.ts), a case of the wallet
// test plans (../wallet-test/plans.ts), a conformance scenario (features/), or nothing, and why. Pure data:
// scripts/oidf-mapping.ts renders docs/oidf-mapping.md from it, test/repo/oidf-mapping.test.ts checks that
// every case id and tag named here exists and that each plan has the suite's number of modules.
//
// Read from the suite's plan classes (`@PublishTestPlan` and the module lists of their `testModulesWithVariants`)
// and module classes (`@PublishTestModule`: testName and summary) at OIDF_SUITE.commit.

import { planCases } from '../wallet-test/plans.ts'

/** Where the module lists were read. */
export const OIDF_SUITE = {
  name: 'OpenID Foundation conformance suite',
  home: 'https://gitlab.com/openid/conformance-suite',
  mirror: 'https://github.com/openid-certification/conformance-suite',
  commit: '12f2a4dac6462f8a4e95968bc7e478e02881e1a7',
  /** the commit's date */
  date: '2026-08-20',
  /** the folder of the module and plan classes */
  sources: 'src/main/java/net/openid/conformance/',
} as const

export const OIDF_PLAN_NAMES = [
  'oid4vp-1final-verifier-test-plan',
  'oid4vci-1_0-issuer-test-plan',
  'oid4vp-1final-wallet-test-plan',
  'oid4vci-1_0-wallet-test-plan',
  'oid4vp-1final-verifier-haip-test-plan',
  'oid4vci-1_0-issuer-haip-test-plan',
  'oid4vp-1final-wallet-haip-test-plan',
  'oid4vci-1_0-wallet-haip-test-plan',
] as const
/** A plan's name as the suite publishes it (`testPlanName`). */
export type OidfPlanName = (typeof OIDF_PLAN_NAMES)[number]

export interface OidfPlan {
  name: OidfPlanName
  /** what the suite plays and what it grades */
  title: string
  /** the plan class, under OIDF_SUITE.sources */
  planClass: string
  haip: boolean
  /** what of vc-harness grades the same party */
  vcHarness: string
}

export const OIDF_PLANS: readonly OidfPlan[] = [
  {
    name: 'oid4vp-1final-verifier-test-plan',
    title: 'OpenID4VP 1.0 Final: the suite plays the wallet and grades a verifier',
    planClass: 'vp1finalverifier/VP1FinalVerifierTestPlan.java',
    haip: false,
    vcHarness:
      '`vc-harness verifier-test` (plan `verifier`); before it, the conformance scenarios of our own verifier',
  },
  {
    name: 'oid4vci-1_0-issuer-test-plan',
    title: 'OpenID4VCI 1.0 Final: the suite plays the wallet and grades an issuer',
    planClass: 'vci10issuer/VCIIssuerTestPlan.java',
    haip: false,
    vcHarness:
      '`vc-harness issuer-test` (plan `issuer`); before it, the conformance scenarios of our own issuer',
  },
  {
    name: 'oid4vp-1final-wallet-test-plan',
    title: 'OpenID4VP 1.0 Final: the suite plays the verifier and grades a wallet',
    planClass: 'vp1finalwallet/VP1FinalWalletTestPlan.java',
    haip: false,
    vcHarness:
      '`vc-harness wallet-test` (plans `presentation-dcql`, `presentation-mdoc`, and `presentation-dc-api` over the Digital Credentials API)',
  },
  {
    name: 'oid4vci-1_0-wallet-test-plan',
    title: 'OpenID4VCI 1.0 Final: the suite plays the issuer and grades a wallet',
    planClass: 'vci10wallet/VCIWalletTestPlan.java',
    haip: false,
    vcHarness: '`vc-harness wallet-test` (plans `issuance-1.0`, `issuance-mdoc`)',
  },
  {
    name: 'oid4vp-1final-verifier-haip-test-plan',
    title: 'OpenID4VP 1.0 Final with HAIP 1.0: the verifier plan with x509_hash and a signed request_uri',
    planClass: 'vp1finalverifier/VP1FinalVerifierTestPlanHaip.java',
    haip: true,
    vcHarness:
      '`vc-harness verifier-test` (plan `verifier`; its `dc-api-*` cases over the Digital Credentials API)',
  },
  {
    name: 'oid4vci-1_0-issuer-haip-test-plan',
    title:
      'OpenID4VCI 1.0 Final with HAIP 1.0: the issuer plan over the authorization code flow with DPoP and wallet attestation, and 40 FAPI 2.0 authorization server modules',
    planClass: 'vci10issuer/VCIIssuerTestPlanHaip.java',
    haip: true,
    vcHarness: '`vc-harness issuer-test` (plan `issuer`)',
  },
  {
    name: 'oid4vp-1final-wallet-haip-test-plan',
    title:
      'OpenID4VP 1.0 Final with HAIP 1.0: the wallet plan with x509_hash and direct_post.jwt, and over the Digital Credentials API',
    planClass: 'vp1finalwallet/VP1FinalWalletTestPlanHaip.java',
    haip: true,
    vcHarness:
      '`vc-harness wallet-test` (plans `presentation-dcql`, `presentation-mdoc`, `presentation-dc-api`)',
  },
  {
    name: 'oid4vci-1_0-wallet-haip-test-plan',
    title:
      'OpenID4VCI 1.0 Final with HAIP 1.0: the wallet plan over the authorization code flow with DPoP and wallet attestation, and 10 FAPI 2.0 client modules',
    planClass: 'vci10wallet/VCIWalletTestPlanHaip.java',
    haip: true,
    vcHarness: '`vc-harness wallet-test` (plans `issuance-1.0`, `issuance-mdoc`)',
  },
]

/**
 * What covers a module. Case ids are `<plan>:<name>`: `issuer:` and `verifier:` name cases of the server test
 * plans (plans.ts), every other plan a case of the wallet test plans; tags are the conformance scenarios'
 * clause tags (`@OID4VP-1.0-8.1`), `scenarios` the titles of the scenarios meant, where a tag has several.
 * `partial`: some of what the module checks is checked, `why` says what is not; `none`: nothing, `why` says
 * why (and which issue brings it).
 */
export type Coverage =
  | { kind: 'issuer-case' | 'verifier-case' | 'wallet-case'; ids: string[] }
  | { kind: 'scenario'; tags: string[]; scenarios?: string[] }
  | { kind: 'partial'; ids?: string[]; tags?: string[]; scenarios?: string[]; why: string }
  | { kind: 'none'; why: string }

export interface OidfModule {
  plan: OidfPlanName
  /** the module's test name, as the suite writes it (`testName`) */
  module: string
  /** in the plan's negative group: the suite sends something wrong */
  negative: boolean
  /** what it checks, in a line */
  checks: string
  /** what of vc-harness covers it now */
  coverage: Coverage
  /**
   * What covered it before the issuer and verifier test plans (issue 34), from the wallet test cases and the
   * conformance scenarios only; absent: the same as `coverage`.
   */
  before?: Coverage
  /** a remark on the coverage (a stricter window, a variant vc-harness does not run) */
  note?: string
}

export const isCovered = (c: Coverage): boolean => c.kind !== 'partial' && c.kind !== 'none'

/** Every case id a coverage names. */
export function coverageIds(c: Coverage): string[] {
  return 'ids' in c ? (c.ids ?? []) : []
}

/** Every tag a coverage names. */
export function coverageTags(c: Coverage): string[] {
  return 'tags' in c ? (c.tags ?? []) : []
}

/** Every scenario title a coverage names. */
export function coverageScenarios(c: Coverage): string[] {
  return 'scenarios' in c ? (c.scenarios ?? []) : []
}

const ISSUE_MDOC = 'issue 35'
const ISSUE_HAIP = 'issue 36'
const ISSUE_DC_API = 'issue 37'
/** Before the DC API plan: what the modules that exist only over the Digital Credentials API had. */
const BEFORE_DC_API: Coverage = {
  kind: 'none',
  why: `vc-harness did not speak the Digital Credentials API yet (${ISSUE_DC_API})`,
}

/** What the authorization code flow's scenarios (features/issuance/haip.feature) need of a target. */
const HAIP_SCENARIOS =
  'the conformance scenarios of features/issuance/haip.feature, against a deployment whose tenant trusts the test wallet provider'

// Scenario titles named more than once.
const SD_JWT_REFUSALS = 'An SD-JWT VC presentation with <defect> is rejected under <check>'
const SD_JWT_VERIFIED =
  'A verified SD-JWT VC presentation reads VERIFIED with the named checks of the pipeline and the submission format dcql'
const KB_TAGS = ['@RFC9901-4.3', '@OID4VP-1.0-B.3.6']
const KEY_PROOF_DEFECTS = 'A key proof with <defect> is refused with <error>'
// The authorization code flow (features/issuance/haip.feature).
const HAIP_AS_METADATA =
  'The authorization server metadata requires pushed authorization requests and announces PKCE S256 only, iss in the authorization response, ES256 DPoP proofs and wallet attestation'
const HAIP_FLOW =
  'A wallet completes an offer of the authorization_code grant alone through PAR, the authorization endpoint and a DPoP-bound token, and receives the SD-JWT VC bound to its key'
const HAIP_ATTENDED =
  'Before the application submits, the wallet of the authorization code flow is told to come back later, and collects the credential from the deferred endpoint with its DPoP-bound token once submitted'
const HAIP_AUTHORIZATION_RESPONSE =
  "A pushed authorization request is answered with a request_uri, and the authorization endpoint answers it with a redirect carrying the code, the client's state and the authorization server's iss"
const HAIP_BEARER =
  'A DPoP-bound access token presented as a Bearer token at the credential endpoint is refused with 401 invalid_token, and taken under the DPoP scheme with a proof of its key'
const HAIP_DECLINE =
  "A person who declines on the authorization page sends the client back with access_denied, the client's state and the authorization server's iss"
const HAIP_PAR_REFUSALS = 'A pushed authorization request <defect> is refused with 400 <error>'
const HAIP_ATTESTATION_REFUSALS =
  'A pushed authorization request whose wallet attestation <defect> is refused with 401 invalid_client'
const HAIP_AUTHORIZE_REFUSALS = 'The authorization endpoint refuses <request> with 400 <error>'
const HAIP_MISBEHAVIOURS =
  'A wallet misbehaving with <misbehaviour> is refused at its <step> request with <status> <error>, and nothing is issued'
/** A wallet attestation refused at PAR (the attestation outline or the misbehaviour outline). */
const attestationRefusal = (scenario = HAIP_ATTESTATION_REFUSALS): Coverage => ({
  kind: 'scenario',
  tags: ['@OAuth-Attestation-6.2'],
  scenarios: [scenario],
})
const AT_PAR =
  'the scenarios send it with the pushed authorization request (the suite: at PAR or at the token endpoint)'

const V_PLAN = 'oid4vp-1final-verifier-test-plan'
const I_PLAN = 'oid4vci-1_0-issuer-test-plan'
const W_VP_PLAN = 'oid4vp-1final-wallet-test-plan'
const W_VCI_PLAN = 'oid4vci-1_0-wallet-test-plan'

const VERIFIER_MODULES: OidfModule[] = [
  {
    plan: V_PLAN,
    module: 'oid4vp-1final-verifier-happy-flow',
    negative: false,
    checks:
      'The verifier accepts a valid presentation of the one credential its DCQL query asks for (an SD-JWT VC, or an ISO mdoc)',
    coverage: { kind: 'verifier-case', ids: ['verifier:happy-flow', 'verifier:mdoc-happy-flow'] },
    before: { kind: 'scenario', tags: ['@OID4VP-1.0-8.1'], scenarios: [SD_JWT_VERIFIED] },
    note: 'verifier:happy-flow presents what the request asks for; verifier:mdoc-happy-flow is the mdoc variant, which applies when it asks for mso_mdoc',
  },
  {
    plan: V_PLAN,
    module: 'oid4vp-1final-verifier-minimal-cnf-jwk',
    negative: false,
    checks:
      'The verifier accepts an SD-JWT VC whose cnf.jwk has only the members its key type requires (no kid, use, alg, x5c)',
    coverage: { kind: 'verifier-case', ids: ['verifier:happy-flow'] },
    before: { kind: 'scenario', tags: ['@OID4VP-1.0-8.1'], scenarios: [SD_JWT_VERIFIED] },
    note: "the harness's test issuer binds its SD-JWT VCs with exactly such a cnf.jwk (kty, crv, x, and y for EC), so the happy flow presents one; with --wallet the user's issuer decides",
  },
  {
    plan: V_PLAN,
    module: 'oid4vp-1final-verifier-request-uri-method-post',
    negative: false,
    checks: 'A verifier whose request says request_uri_method=post serves its request object to a POST',
    coverage: { kind: 'verifier-case', ids: ['verifier:request-uri-post'] },
    before: {
      kind: 'scenario',
      tags: ['@OID4VP-1.0-5.10', '@OID4VP-1.0-5.10.1'],
      scenarios: [
        'The request of a verifier named by <prefix>, fetched by POST, echoes the wallet_nonce and its <mode> answer is VERIFIED',
      ],
    },
  },
  {
    plan: V_PLAN,
    module: 'oid4vp-1final-verifier-request-uri-fetched-twice',
    negative: false,
    checks: 'The verifier serves its request object again when the wallet fetches request_uri a second time',
    coverage: { kind: 'verifier-case', ids: ['verifier:request-uri-twice'] },
    before: { kind: 'none', why: 'no scenario fetched a request object twice' },
  },
  {
    plan: V_PLAN,
    module: 'oid4vp-1final-verifier-invalid-session-transcript',
    negative: true,
    checks:
      'The verifier rejects an mdoc whose device signature covers a session transcript with another nonce',
    coverage: { kind: 'verifier-case', ids: ['verifier:mdoc-wrong-nonce'] },
    before: { kind: 'none', why: `vc-harness did not speak ISO mdoc (mso_mdoc) yet (${ISSUE_MDOC})` },
    note: 'verifier:mdoc-wrong-client-id and verifier:mdoc-wrong-response-uri change the other members of the same OpenID4VPHandover',
  },
  {
    plan: V_PLAN,
    module: 'oid4vp-1final-verifier-invalid-kb-jwt-signature',
    negative: true,
    checks:
      "The verifier rejects an SD-JWT VC whose KB-JWT signature does not verify with the credential's cnf key",
    coverage: { kind: 'verifier-case', ids: ['verifier:kb-bad-signature'] },
    before: {
      kind: 'none',
      why: "the simulated wallet had no misbehaviour corrupting the KB-JWT's signature",
    },
  },
  {
    plan: V_PLAN,
    module: 'oid4vp-1final-verifier-invalid-credential-signature',
    negative: true,
    checks: 'The verifier rejects an SD-JWT VC whose issuer signature is corrupted',
    coverage: { kind: 'verifier-case', ids: ['verifier:sd-issuer-signature'] },
    before: {
      kind: 'partial',
      tags: ['@RFC9901-7.1'],
      scenarios: [SD_JWT_REFUSALS],
      why: 'only a disclosure altered after issuance was rejected; the issuer-signed JWT itself was never corrupted',
    },
  },
  {
    plan: V_PLAN,
    module: 'oid4vp-1final-verifier-invalid-sd-hash',
    negative: true,
    checks: 'The verifier rejects a KB-JWT whose sd_hash is not the hash of the presented SD-JWT',
    coverage: { kind: 'verifier-case', ids: ['verifier:kb-wrong-sd-hash'] },
    before: { kind: 'scenario', tags: KB_TAGS, scenarios: [SD_JWT_REFUSALS] },
  },
  {
    plan: V_PLAN,
    module: 'oid4vp-1final-verifier-invalid-kb-jwt-nonce',
    negative: true,
    checks: "The verifier rejects a KB-JWT whose nonce is not the authorization request's",
    coverage: { kind: 'verifier-case', ids: ['verifier:kb-wrong-nonce'] },
    before: { kind: 'scenario', tags: KB_TAGS, scenarios: [SD_JWT_REFUSALS] },
  },
  {
    plan: V_PLAN,
    module: 'oid4vp-1final-verifier-invalid-kb-jwt-aud',
    negative: true,
    checks: "The verifier rejects a KB-JWT whose aud is not the verifier's client identifier",
    coverage: { kind: 'verifier-case', ids: ['verifier:kb-wrong-aud'] },
    before: { kind: 'scenario', tags: KB_TAGS, scenarios: [SD_JWT_REFUSALS] },
  },
  {
    plan: V_PLAN,
    module: 'oid4vp-1final-verifier-kb-jwt-iat-in-past',
    negative: true,
    checks: 'The verifier rejects a KB-JWT issued a year ago',
    coverage: { kind: 'verifier-case', ids: ['verifier:kb-stale-iat'] },
    before: { kind: 'scenario', tags: KB_TAGS, scenarios: [SD_JWT_REFUSALS] },
    note: "vc-harness's KB-JWT is an hour old: a narrower window than the suite's year",
  },
  {
    plan: V_PLAN,
    module: 'oid4vp-1final-verifier-kb-jwt-iat-in-future',
    negative: true,
    checks: 'The verifier rejects a KB-JWT issued a year in the future',
    coverage: { kind: 'verifier-case', ids: ['verifier:kb-future-iat'] },
    before: { kind: 'none', why: 'the simulated wallet had no misbehaviour dating the KB-JWT in the future' },
    note: "vc-harness's KB-JWT is an hour in the future: a narrower window than the suite's year",
  },
]

const ISSUER_MODULES: OidfModule[] = [
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-metadata-test',
    negative: false,
    checks:
      "The credential issuer metadata (application/json) member by member (required members, https URLs, credential_issuer, signing and proof algorithms, display locales, encryption parameters) and its authorization servers' RFC 8414 metadata",
    coverage: {
      kind: 'partial',
      ids: ['issuer:metadata', 'issuer:metadata-appended'],
      why: "vc-harness checks the well-known location, credential_issuer, credential_endpoint and the offered configurations; not the suite's member-by-member validation, nor the authorization server metadata",
    },
    before: {
      kind: 'partial',
      tags: ['@OID4VCI-1.0-12.2.2', '@OID4VCI-1.0-12.2.4', '@OID4VCI-1.0-12.3'],
      why: "the scenarios check the location, credential_issuer, every configuration's credential_metadata and the RFC 8414 metadata of our own issuer; not the suite's member-by-member validation",
    },
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-metadata-test-signed',
    negative: false,
    checks:
      'Signed credential issuer metadata (asked for as application/jwt) verifies; skipped when the issuer does not sign it',
    coverage: {
      kind: 'none',
      why: 'vc-harness neither asks for nor verifies signed issuer metadata (no issue yet); the suite skips the module for an issuer that does not sign',
    },
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-happy-flow',
    negative: false,
    checks:
      'A whole issuance (token, nonce endpoint, key proof, credential, deferred where the issuer defers, notification) while the wallet adds unknown members to its JSON requests, which the issuer must ignore',
    coverage: {
      kind: 'partial',
      ids: ['issuer:happy-flow', 'issuer:deferred', 'issuer:notification'],
      why: "vc-harness's wallet sends no unknown members, so the rule that an issuer ignores them is not checked",
    },
    before: {
      kind: 'partial',
      tags: ['@OID4VCI-1.0-8.2', '@OID4VCI-1.0-8.3'],
      scenarios: [
        'A credential request with proofs is answered 200 with the credentials and a notification_id',
      ],
      why: 'the scenarios send no unknown members',
    },
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-happy-flow-additional-requests',
    negative: false,
    checks:
      "After the first credential, more credential requests on the same access token (with a FAPI customer IP header, with a permissive Accept) are answered 200 or 202; the credential endpoint's TLS versions and ciphers follow BCP 195",
    coverage: {
      kind: 'partial',
      ids: ['issuer:additional-requests'],
      why: "vc-harness checks that a second credential request on one access token is served; not the TLS versions and ciphers, nor the request headers' variations",
    },
    before: {
      kind: 'none',
      why: 'no scenario made a second credential request on one access token (our own issuer refused it)',
    },
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-happy-flow-multiple-clients',
    negative: false,
    checks: 'Two registered OAuth clients each complete an issuance, one after the other',
    coverage: {
      kind: 'none',
      why: `needs two clients, each with its client_id and authentication, completing issuance one after the other; vc-harness's wallet authenticates by wallet attestation (${ISSUE_HAIP}), but no case or scenario runs two clients against one issuer`,
    },
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-happy-flow-skip-notification',
    negative: false,
    checks: 'An issuance completes although the wallet never calls the notification endpoint',
    coverage: { kind: 'issuer-case', ids: ['issuer:happy-flow'] },
    before: {
      kind: 'scenario',
      tags: ['@OID4VCI-1.0-8.3'],
      scenarios: [
        'A credential request with proofs is answered 200 with the credentials and a notification_id',
      ],
    },
    note: 'the happy flow sends no notification (the notification case does)',
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-batch-issuance',
    negative: false,
    checks:
      'A credential request with one key proof per credential (up to the advertised batch_size) is answered with credentials of one dataset, each bound to a different proof key',
    coverage: {
      kind: 'none',
      why: "vc-harness's issuer answers batches and its wallet sends them (--batch; test/service/oid4vci/batch.test.ts, test/wallet/key-attestation-service.test.ts), but no issuer-test case asks another issuer for a batch yet",
    },
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-fail-invalid-nonce',
    negative: true,
    checks: 'A key proof with a c_nonce the issuer never gave is refused with invalid_nonce',
    coverage: { kind: 'issuer-case', ids: ['issuer:nonce-unknown'] },
    before: { kind: 'scenario', tags: ['@OID4VCI-F.4', '@OID4VCI-1.0-F.4'], scenarios: [KEY_PROOF_DEFECTS] },
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-fail-invalid-jwt-proof-signature',
    negative: true,
    checks: 'A jwt key proof whose signature does not verify is refused with invalid_proof',
    coverage: { kind: 'issuer-case', ids: ['issuer:proof-foreign-signature'] },
    before: { kind: 'scenario', tags: ['@OID4VCI-F.4'], scenarios: [KEY_PROOF_DEFECTS] },
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-fail-invalid-key-attestation-signature',
    negative: true,
    checks:
      'A key attestation whose signature does not verify is refused with invalid_proof (where the configuration requires key attestation)',
    coverage: {
      kind: 'none',
      why: "vc-harness's issuer refuses it (test/service/oid4vci/key-attestation.test.ts) and its wallet sends key attestations (misbehaviour key-attestation-foreign-key), but no issuer-test case sends a broken one to another issuer yet",
    },
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-fail-invalid-client-attestation-signature',
    negative: true,
    checks:
      'A client attestation JWT whose signature does not verify is refused with invalid_client (at PAR, or at the token endpoint)',
    coverage: attestationRefusal(),
    note: AT_PAR,
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-fail-invalid-client-attestation-pop-signature',
    negative: true,
    checks:
      'A client attestation proof of possession whose signature does not verify is refused with invalid_client',
    coverage: attestationRefusal(),
    note: AT_PAR,
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-fail-client-attestation-exp-in-past',
    negative: true,
    checks: 'A client attestation that expired ten minutes ago is refused at PAR',
    coverage: attestationRefusal(),
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-fail-client-attestation-no-sub',
    negative: true,
    checks: 'A client attestation without sub is refused at PAR',
    coverage: attestationRefusal(),
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-fail-client-attestation-pop-wrong-aud',
    negative: true,
    checks:
      'A client attestation proof of possession whose aud is not the authorization server is refused at PAR',
    coverage: attestationRefusal(HAIP_MISBEHAVIOURS),
    note: 'the simulated wallet misbehaving with attestation-pop-wrong-aud',
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-fail-mismatched-client-attestation-pop-key',
    negative: true,
    checks:
      "A proof of possession signed by another key than the attestation's cnf key is refused with invalid_client",
    coverage: attestationRefusal(),
    note: AT_PAR,
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-fail-missing-proof',
    negative: true,
    checks:
      'A credential request without proofs, for a configuration that binds to a key, is refused with invalid_proof',
    coverage: { kind: 'issuer-case', ids: ['issuer:proof-missing'] },
    before: {
      kind: 'none',
      why: 'no scenario sent a credential request without a key proof',
    },
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-fail-unsupported-encryption-algorithm',
    negative: true,
    checks:
      'A credential_response_encryption with an unsupported algorithm is refused with invalid_encryption_parameters (where the issuer encrypts)',
    coverage: {
      kind: 'none',
      why: "vc-harness's wallet never asks for an encrypted credential response (no issue yet); the suite skips the module unless encryption is chosen",
    },
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-fail-unknown-credential-configuration',
    negative: true,
    checks:
      'A credential request naming an unknown credential_configuration_id is refused with unknown_credential_configuration',
    coverage: { kind: 'issuer-case', ids: ['issuer:unknown-configuration'] },
    before: {
      kind: 'partial',
      tags: ['@OID4VCI-draft13-7.2', '@OID4VCI-1.0-8.3.1.2'],
      scenarios: [
        'A format-based request describing a credential the access token does not grant is refused with invalid_credential_request',
      ],
      why: 'only a draft 13 format-based request for a credential the token does not grant was refused; no request named an unknown credential_configuration_id',
    },
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-fail-unknown-credential-identifier',
    negative: true,
    checks:
      'A credential request naming an unknown credential_identifier is refused with unknown_credential_identifier',
    coverage: { kind: 'issuer-case', ids: ['issuer:unknown-identifier'] },
    before: { kind: 'none', why: 'no scenario named an unknown credential_identifier' },
  },
  {
    plan: I_PLAN,
    module: 'oid4vci-1_0-issuer-fail-on-access-token-in-query',
    negative: true,
    checks:
      'A credential request carrying the access token as a query parameter is refused (FAPI 2.0 forbids it)',
    coverage: { kind: 'issuer-case', ids: ['issuer:token-in-query'] },
    before: { kind: 'none', why: 'no scenario sent the access token in the query string' },
  },
]

const WALLET_VP_MODULES: OidfModule[] = [
  {
    plan: W_VP_PLAN,
    module: 'oid4vp-1final-wallet-happy-flow',
    negative: false,
    checks: 'The wallet answers a valid request (no state) with a valid presentation',
    coverage: { kind: 'wallet-case', ids: ['presentation-dcql:positive', 'presentation-mdoc:positive'] },
  },
  {
    plan: W_VP_PLAN,
    module: 'oid4vp-1final-wallet-alternate-happy-flow',
    negative: false,
    checks:
      'The wallet answers a request with a long state and nonce, an unknown parameter, an iss other than client_id, reordered parameters, and follows the redirect_uri the response_uri returns',
    coverage: {
      kind: 'none',
      why: 'no wallet test case sends these variations of a valid request (no issue yet)',
    },
  },
  {
    plan: W_VP_PLAN,
    module: 'oid4vp-1final-wallet-request-uri-method-post',
    negative: false,
    checks:
      'The wallet fetches a request_uri with POST when the request says request_uri_method=post (GET is allowed too)',
    coverage: { kind: 'wallet-case', ids: ['presentation-dcql:positive-x509-hash-post'] },
  },
  {
    plan: W_VP_PLAN,
    module: 'oid4vp-1final-wallet-ignores-unusable-encryption-key',
    negative: false,
    checks:
      "The wallet encrypts its response to the one usable key among unusable ones in the verifier's client_metadata",
    coverage: { kind: 'none', why: 'no wallet test case offers unusable encryption keys (no issue yet)' },
  },
  {
    plan: W_VP_PLAN,
    module: 'oid4vp-1final-wallet-fewer-claims-than-available',
    negative: false,
    checks:
      'Asked for fewer claims than the credential holds, the wallet discloses only those (data minimisation)',
    coverage: {
      kind: 'none',
      why: "the wallet test judge does not look at which claims a wallet discloses (the scenario @OID4VP-1.0-6.4.1 shows only that vc-harness's own wallet minimises)",
    },
  },
  {
    plan: W_VP_PLAN,
    module: 'oid4vp-1final-wallet-optional-credential-set',
    negative: false,
    checks:
      'A DCQL query with an optional credential_set the wallet cannot match is answered with the required credential only',
    coverage: { kind: 'none', why: 'no wallet test case sends credential_sets (no issue yet)' },
  },
  {
    plan: W_VP_PLAN,
    module: 'oid4vp-1final-wallet-no-claims-in-dcql-query',
    negative: false,
    checks: 'A DCQL query without claims is answered with the credential and no selectively disclosed claims',
    coverage: { kind: 'none', why: 'no wallet test case sends a DCQL query without claims (no issue yet)' },
  },
  {
    plan: W_VP_PLAN,
    module: 'oid4vp-1final-wallet-negative-test-response-uri-not-client-id',
    negative: true,
    checks: 'The wallet refuses a redirect_uri client identifier whose response_uri is another URL',
    coverage: { kind: 'wallet-case', ids: ['presentation-dcql:response-uri-foreign-origin-redirect-uri'] },
  },
  {
    plan: W_VP_PLAN,
    module: 'oid4vp-1final-wallet-negative-test-invalid-request-object-signature',
    negative: true,
    checks: 'The wallet refuses a request object whose signature does not verify',
    coverage: {
      kind: 'wallet-case',
      ids: [
        'presentation-dcql:request-foreign-signature',
        'presentation-mdoc:request-foreign-signature',
        'presentation-dc-api:request-foreign-signature',
      ],
    },
    before: {
      kind: 'wallet-case',
      ids: ['presentation-dcql:request-foreign-signature', 'presentation-mdoc:request-foreign-signature'],
    },
    note: 'presentation-dc-api:request-foreign-signature is the signed request over the Digital Credentials API (x509_hash)',
  },
  {
    plan: W_VP_PLAN,
    module: 'oid4vp-1final-wallet-multisigned-one-invalid-signature',
    negative: true,
    checks:
      'The wallet accepts a multi-signed request object of which one signature is invalid and the other valid (a wrong input, a positive outcome)',
    coverage: { kind: 'wallet-case', ids: ['presentation-dc-api:multisigned-one-invalid-signature'] },
    before: BEFORE_DC_API,
    note: 'the fault dc-api-multisigned-one-invalid-signature corrupts the first (x509_hash) signature and keeps the decentralized_identifier one; presentation-dc-api:multisigned-all-invalid, which corrupts both, must be refused',
  },
  {
    plan: W_VP_PLAN,
    module: 'oid4vp-1final-wallet-negative-test-mismatched-client-id',
    negative: true,
    checks: "The wallet refuses a request object whose client_id differs from the URL's",
    coverage: {
      kind: 'wallet-case',
      ids: ['presentation-dcql:client-id-mismatch', 'presentation-mdoc:client-id-mismatch'],
    },
  },
  {
    plan: W_VP_PLAN,
    module: 'oid4vp-1final-wallet-negative-test-redirect-uri-with-direct-post',
    negative: true,
    checks: 'The wallet answers invalid_request to a direct_post request that also carries redirect_uri',
    coverage: {
      kind: 'none',
      why: 'no wallet test case adds redirect_uri to a direct_post request (no issue yet)',
    },
  },
  {
    plan: W_VP_PLAN,
    module: 'oid4vp-1final-wallet-negative-test-missing-nonce',
    negative: true,
    checks: 'The wallet refuses a request without a nonce',
    coverage: {
      kind: 'wallet-case',
      ids: ['presentation-dcql:nonce-missing', 'presentation-mdoc:nonce-missing'],
    },
  },
  {
    plan: W_VP_PLAN,
    module: 'oid4vp-1final-wallet-negative-test-wrong-expected-origins',
    negative: true,
    checks:
      "The wallet refuses a signed Digital Credentials API request whose expected_origins leave out the caller's origin",
    coverage: { kind: 'wallet-case', ids: ['presentation-dc-api:wrong-expected-origins'] },
    before: BEFORE_DC_API,
    note: 'expected_origins ["https://wrong.example.com"], as the suite sends; presentation-dc-api:expected-origins-missing leaves them out of a signed request',
  },
  {
    plan: W_VP_PLAN,
    module: 'oid4vp-1final-wallet-negative-test-invalid-client-id-prefix',
    negative: true,
    checks: 'The wallet cannot complete a request whose client_id has an unknown prefix',
    coverage: { kind: 'wallet-case', ids: ['presentation-dcql:unknown-client-id-prefix'] },
  },
  {
    plan: W_VP_PLAN,
    module: 'oid4vp-1final-wallet-negative-test-unknown-transaction-data-type',
    negative: true,
    checks: 'The wallet refuses a request whose transaction_data has a type it does not know',
    coverage: { kind: 'none', why: 'vc-harness sends no transaction_data (no issue yet)' },
  },
  {
    plan: W_VP_PLAN,
    module: 'oid4vp-1final-wallet-negative-test-required-non-matching-credential',
    negative: true,
    checks:
      'A DCQL query whose required credential_set it cannot satisfy gets no vp_token from the wallet (neither empty nor partial)',
    coverage: {
      kind: 'partial',
      ids: ['presentation-dcql:query-unsatisfiable'],
      why: 'vc-harness asks for one credential the wallet does not hold; the partial answer to a credential_set of which one credential matches is not tested',
    },
  },
]

const WALLET_VCI_MODULES: OidfModule[] = [
  {
    plan: W_VCI_PLAN,
    module: 'oid4vci-1_0-wallet-test-credential-issuance',
    negative: false,
    checks:
      'The wallet obtains a credential from the suite as issuer (issuer- or wallet-initiated; pre-authorized or authorization code; immediate or deferred)',
    coverage: {
      kind: 'wallet-case',
      ids: ['issuance-1.0:positive', 'issuance-mdoc:positive', 'issuance-haip:positive'],
    },
    note: 'issuance-haip:positive is the authorization code variant (issuer-initiated, immediate); the wallet-initiated and deferred variants have no wallet test case',
  },
  {
    plan: W_VCI_PLAN,
    module: 'oid4vci-1_0-wallet-test-credential-issuance-notification',
    negative: false,
    checks:
      'After receiving the credential the wallet calls the notification endpoint (skipped when it does not)',
    coverage: { kind: 'wallet-case', ids: ['issuance-1.0:positive'] },
    note: 'the judge takes a credential_accepted notification as proof the wallet kept the credential',
  },
  {
    plan: W_VCI_PLAN,
    module: 'oid4vci-1_0-wallet-happy-path-with-scopes-without-authorization-details-in-token-response',
    negative: false,
    checks:
      'The wallet obtains a credential requested by scope when the token response carries no authorization_details',
    coverage: {
      kind: 'none',
      why: "the issuance-haip plan's issuer answers the token request with authorization_details (the wallet asks by authorization_details and scope); no case leaves them out of the token response (no issue yet)",
    },
  },
  {
    plan: W_VCI_PLAN,
    module: 'oid4vci-1_0-wallet-test-client-attestation-challenge',
    negative: false,
    checks:
      "The wallet fetches a challenge from the authorization server's challenge endpoint and puts it in its client attestation proof of possession",
    coverage: {
      kind: 'none',
      why: "the issuance-haip plan's issuer requires a wallet attestation but gives no challenge: no challenge endpoint, no OAuth-Client-Attestation-Challenge header (no issue yet)",
    },
  },
  {
    plan: W_VCI_PLAN,
    module: 'oid4vci-1_0-wallet-test-batch-credential-issuance',
    negative: false,
    checks:
      'Offered batch issuance, the wallet sends distinct proof keys, no more than batch_size, and binds each credential (returned in reverse order) to its key',
    coverage: {
      kind: 'none',
      why: "vc-harness's issuer offers batch_credential_issuance (oid4vci.batchSize), but no wallet-test case asks the wallet for a batch yet",
    },
  },
]

/** The modules of the four OpenID4VCI 1.0 / OpenID4VP 1.0 plans (55; 32 in the plans' negative groups). */
export const OIDF_MODULES: readonly OidfModule[] = [
  ...VERIFIER_MODULES,
  ...ISSUER_MODULES,
  ...WALLET_VP_MODULES,
  ...WALLET_VCI_MODULES,
]

// The HAIP plans: the same module classes in HAIP's variants, and FAPI 2.0 modules.

const HAIP_ISSUER_WHY = `the HAIP plan runs it over the authorization code flow with PAR, DPoP and wallet attestation; vc-harness checks the same rule over a pre-authorized code offer with a bearer token (its issuer speaks the authorization code flow since ${ISSUE_HAIP}, and the issuer plan's haip-* cases grade another issuer's, but this module's variant is not mapped to them yet)`
const HAIP_METADATA_WHY =
  'the HAIP plan adds rules of its own (a nonce endpoint in the metadata, the credential formats HAIP allows), which vc-harness does not check'
const HAIP_VCI_WALLET_WHY = `HAIP fixes the authorization code flow with DPoP and wallet attestation; issuance-1.0 offers a pre-authorized code, and the issuance-haip plan (${ISSUE_HAIP}) has no case for this module`

/** A module of a 1.0 plan in a HAIP plan: the rule vc-harness checks, in a variant HAIP does not run. */
function inHaip(m: OidfModule, plan: OidfPlanName, why: string, ids = coverageIds(m.coverage)): OidfModule {
  const c = m.coverage
  const coverage: Coverage =
    c.kind === 'none'
      ? c
      : {
          kind: 'partial',
          ids,
          ...(coverageTags(c).length > 0 ? { tags: coverageTags(c) } : {}),
          why: c.kind === 'partial' ? `${c.why}; and ${why}` : why,
        }
  return { plan, module: m.module, negative: m.negative, checks: m.checks, coverage }
}

const modulesOf = (list: readonly OidfModule[], names: readonly string[]): OidfModule[] =>
  names.map((name) => {
    const m = list.find((x) => x.module === name)
    if (!m) throw new Error(`no module ${name}`)
    return m
  })

// VP1FinalVerifierTestPlanHaip runs the verifier plan with direct_post.jwt and over the Digital Credentials API
// (dc_api.jwt). Over the DC API, vc-harness answers a correct presentation (dc-api-happy-flow) and binds it
// wrongly (another origin, the client_id, another request); the other misbehaviours go by link only.
const DC_API_VERIFIER_NOTE =
  "over the Digital Credentials API (dc_api.jwt) the verifier plan runs the dc-api-* cases (a correct answer; one bound to another origin, to the client_id, to another request), not this module's misbehaviour, which it sends by link"
const HAIP_VERIFIER: OidfModule[] = VERIFIER_MODULES.map((m) => {
  const happy = m.module === 'oid4vp-1final-verifier-happy-flow'
  const coverage: Coverage =
    happy && m.coverage.kind === 'verifier-case'
      ? { kind: 'verifier-case', ids: [...m.coverage.ids, 'verifier:dc-api-happy-flow'] }
      : m.coverage
  return {
    plan: 'oid4vp-1final-verifier-haip-test-plan',
    module: m.module,
    negative: m.negative,
    checks: m.checks,
    coverage,
    note: [
      m.note,
      happy
        ? 'verifier:dc-api-happy-flow is the variant over the Digital Credentials API, applicable when the verifier offers its request there'
        : DC_API_VERIFIER_NOTE,
    ]
      .filter(Boolean)
      .join('; '),
  }
})

/** How a presentation plan (presentation-dcql, presentation-mdoc) runs a case: its client identifier prefix and response mode. */
function dcqlVariant(id: string): string {
  const flow = planCases('all').find((c) => c.id === id)?.flow
  if (!flow) throw new Error(`no wallet test case ${id}`)
  if (flow.kind !== 'presentation') return 'an issuance'
  return `${flow.clientIdPrefix ?? 'decentralized_identifier'} and ${flow.responseMode ?? 'direct_post'}`
}

/**
 * Modules of the wallet plan vc-harness runs in HAIP's variants themselves: x509_hash with direct_post.jwt,
 * and over the Digital Credentials API (presentation-dc-api: unsigned, signed under x509_hash and multi-signed
 * requests answered with dc_api.jwt; the mDL of HAIP's DC API variant).
 */
const HAIP_VP_NATIVE: Readonly<Record<string, Pick<OidfModule, 'coverage' | 'note'>>> = {
  'oid4vp-1final-wallet-happy-flow': {
    coverage: {
      kind: 'wallet-case',
      ids: [
        'presentation-mdoc:positive-x509-hash-jwt',
        'presentation-dc-api:positive-unsigned-jwt',
        'presentation-dc-api:positive-signed-jwt',
        'presentation-dc-api:positive-multisigned',
        'presentation-dc-api:positive-mdoc',
      ],
    },
    note: 'by link with x509_hash and direct_post.jwt (an mDL), and over the Digital Credentials API with dc_api.jwt: unsigned, signed (x509_hash; an SD-JWT VC and the mDL) and multi-signed requests',
  },
  'oid4vp-1final-wallet-negative-test-invalid-request-object-signature': {
    coverage: {
      kind: 'wallet-case',
      ids: ['presentation-mdoc:request-foreign-signature', 'presentation-dc-api:request-foreign-signature'],
    },
    note: 'x509_hash by link (direct_post.jwt) and a signed x509_hash request over the Digital Credentials API',
  },
  'oid4vp-1final-wallet-multisigned-one-invalid-signature': {
    coverage: { kind: 'wallet-case', ids: ['presentation-dc-api:multisigned-one-invalid-signature'] },
    note: 'answered with dc_api (the positive multi-signed case, presentation-dc-api:positive-multisigned, with dc_api.jwt)',
  },
  'oid4vp-1final-wallet-negative-test-wrong-expected-origins': {
    coverage: { kind: 'wallet-case', ids: ['presentation-dc-api:wrong-expected-origins'] },
    note: 'a signed x509_hash request whose expected_origins are ["https://wrong.example.com"]',
  },
}

// VP1FinalWalletTestPlanHaip: every module but response-uri-not-client-id (not applicable to x509_hash and
// web-origin), in the union of its four variant entries (direct_post.jwt with x509_hash; three over the DC API).
const HAIP_VP_WALLET: OidfModule[] = WALLET_VP_MODULES.filter(
  (m) => m.module !== 'oid4vp-1final-wallet-negative-test-response-uri-not-client-id',
).map((m) => {
  // the happy flow: the positive cases nearest HAIP's variant (presentation-mdoc's is HAIP's own)
  const ids =
    m.module === 'oid4vp-1final-wallet-happy-flow'
      ? [
          'presentation-dcql:positive-x509-san-dns-jwt',
          'presentation-dcql:positive-x509-hash-post',
          'presentation-mdoc:positive-x509-hash-jwt',
        ]
      : coverageIds(m.coverage)
  const native = HAIP_VP_NATIVE[m.module]
  if (native) {
    return {
      plan: 'oid4vp-1final-wallet-haip-test-plan' as const,
      module: m.module,
      negative: m.negative,
      checks: m.checks,
      ...native,
    }
  }
  const runs = ids.map((id) => `${id} with ${dcqlVariant(id)}`).join(', ')
  const why = `HAIP asks with x509_hash and direct_post.jwt, or over the Digital Credentials API; vc-harness runs ${runs}, by link (over the DC API only the presentation-dc-api cases)`
  return inHaip(m, 'oid4vp-1final-wallet-haip-test-plan', why, ids)
})

/**
 * Modules of the issuer plan that a conformance scenario checks over the authorization code flow itself (PAR,
 * DPoP, wallet attestation): in the HAIP plan they are covered as they are, not only in another variant.
 */
const HAIP_ISSUER_NATIVE: Readonly<Record<string, Coverage | 'as-is'>> = {
  'oid4vci-1_0-issuer-happy-flow': {
    kind: 'partial',
    ids: ['issuer:happy-flow', 'issuer:deferred', 'issuer:notification'],
    tags: ['@HAIP-1.0-4.1', '@OID4VCI-1.0-9'],
    scenarios: [HAIP_FLOW, HAIP_ATTENDED],
    why: `over the authorization code flow with PAR, DPoP and wallet attestation, immediate and deferred, only ${HAIP_SCENARIOS} run it; the issuer-test cases run it over a pre-authorized offer with a bearer token; neither sends unknown members`,
  },
  'oid4vci-1_0-issuer-fail-invalid-client-attestation-signature': 'as-is',
  'oid4vci-1_0-issuer-fail-invalid-client-attestation-pop-signature': 'as-is',
  'oid4vci-1_0-issuer-fail-client-attestation-exp-in-past': 'as-is',
  'oid4vci-1_0-issuer-fail-client-attestation-no-sub': 'as-is',
  'oid4vci-1_0-issuer-fail-client-attestation-pop-wrong-aud': 'as-is',
  'oid4vci-1_0-issuer-fail-mismatched-client-attestation-pop-key': 'as-is',
}

// VCIIssuerTestPlanHaip: the 1.0 plan's modules (unsupported-encryption-algorithm in the encrypted entry only)
const HAIP_ISSUER_VCI: OidfModule[] = ISSUER_MODULES.map((m) => {
  const plan: OidfPlanName = 'oid4vci-1_0-issuer-haip-test-plan'
  const native = HAIP_ISSUER_NATIVE[m.module]
  if (native === 'as-is') {
    const { before: _before, ...rest } = m
    return { ...rest, plan }
  }
  if (native) return { plan, module: m.module, negative: m.negative, checks: m.checks, coverage: native }
  return inHaip(
    m,
    plan,
    // the metadata modules fetch metadata only, with HAIP's rules added
    m.module.startsWith('oid4vci-1_0-issuer-metadata-test') ? HAIP_METADATA_WHY : HAIP_ISSUER_WHY,
  )
})

/** Modules of the wallet plan that the issuance-haip plan runs in HAIP's own variant. */
const HAIP_WALLET_NATIVE: Readonly<Record<string, Pick<OidfModule, 'coverage' | 'note'>>> = {
  'oid4vci-1_0-wallet-test-credential-issuance': {
    coverage: { kind: 'wallet-case', ids: ['issuance-haip:positive'] },
    note: "issuer-initiated and immediate; HAIP's wallet-initiated and deferred variants have no wallet test case",
  },
  'oid4vci-1_0-wallet-test-credential-issuance-notification': {
    coverage: { kind: 'wallet-case', ids: ['issuance-haip:positive'] },
    note: 'the judge takes a credential_accepted notification as proof the wallet kept the credential',
  },
}

// VCIWalletTestPlanHaip: the 1.0 plan's modules without the scopes module.
const HAIP_WALLET_VCI: OidfModule[] = modulesOf(WALLET_VCI_MODULES, [
  'oid4vci-1_0-wallet-test-credential-issuance',
  'oid4vci-1_0-wallet-test-credential-issuance-notification',
  'oid4vci-1_0-wallet-test-client-attestation-challenge',
  'oid4vci-1_0-wallet-test-batch-credential-issuance',
]).map((m) => {
  const plan: OidfPlanName = 'oid4vci-1_0-wallet-haip-test-plan'
  const native = HAIP_WALLET_NATIVE[m.module]
  if (native) return { plan, module: m.module, negative: m.negative, checks: m.checks, ...native }
  // the challenge module: the 1.0 row's reason is HAIP's too
  if (m.coverage.kind === 'none')
    return { plan, module: m.module, negative: m.negative, checks: m.checks, coverage: m.coverage }
  return inHaip(m, plan, HAIP_VCI_WALLET_WHY)
})

const FAPI_AS = `a FAPI 2.0 authorization server module: vc-harness's issuer speaks the authorization code flow (${ISSUE_HAIP}) and the issuer plan's haip-* cases grade another issuer's, but no scenario or case checks this rule yet`
const FAPI_CLIENT = `a FAPI 2.0 client module, for the wallet's authorization code flow: the issuance-haip wallet test plan (${ISSUE_HAIP}) has no case for this rule yet`
/** The service refuses it, as a unit test shows; no scenario or case sends it. */
const UNIT_TESTED = (what: string) =>
  `the service refuses ${what}, tested in test/service/oid4vci/authorization-code.test.ts; no conformance scenario or case sends it`

/** A FAPI 2.0 module of a HAIP plan: not covered unless `coverage` says otherwise. */
function fapi(
  plan: OidfPlanName,
  module: string,
  negative: boolean,
  checks: string,
  coverage?: Coverage,
  note?: string,
): OidfModule {
  const why = plan === 'oid4vci-1_0-issuer-haip-test-plan' ? FAPI_AS : FAPI_CLIENT
  return {
    plan,
    module: `fapi2-security-profile-final-${module}`,
    negative,
    checks,
    coverage: coverage ?? { kind: 'none', why },
    ...(note && { note }),
  }
}

/** A FAPI 2.0 module covered by scenarios of features/issuance/haip.feature. */
const haipScenario = (tags: string[], scenarios: string[]): Coverage => ({
  kind: 'scenario',
  tags,
  scenarios,
})

const HI = 'oid4vci-1_0-issuer-haip-test-plan'
const HW = 'oid4vci-1_0-wallet-haip-test-plan'

// VCIIssuerTestPlanHaip: FAPI2SPFinalDiscoveryEndpointVerification and vciFapi2SPFinalTestModules() (the FAPI
// 2.0 message signing plan's modules, less those that need signing, OpenID Connect, private_key_jwt or
// another profile).
const HAIP_ISSUER_FAPI: OidfModule[] = [
  fapi(
    HI,
    'discovery-end-point-verification',
    false,
    "The authorization server's metadata has the values FAPI 2.0 requires",
    {
      kind: 'partial',
      tags: ['@RFC8414-2', '@RFC9126-5', '@RFC9207-3', '@RFC9449-5.1', '@OAuth-Attestation-10.1'],
      scenarios: [HAIP_AS_METADATA],
      why: "the scenario checks the issuer, the authorization code grant, PAR required, PKCE S256 and not plain, iss in the response, ES256 DPoP and attestation-based client authentication; not the rest of FAPI 2.0's list (https endpoints among them)",
    },
  ),
  fapi(
    HI,
    'happy-flow',
    false,
    'Two clients complete the authorization code flow with PAR and sender-constrained tokens',
    {
      kind: 'partial',
      tags: ['@HAIP-1.0-4.1', '@OID4VCI-1.0-6.2'],
      scenarios: [HAIP_FLOW],
      why: 'one client completes the flow (PAR, the code, a DPoP-bound token, the credential); no scenario has a second client complete it after the first',
    },
  ),
  fapi(
    HI,
    'user-rejects-authentication',
    true,
    'A user who cancels at the authorization endpoint is sent back with access_denied',
    haipScenario(['@RFC6749-4.1.2.1'], [HAIP_DECLINE]),
    'the person declines on the page of a template whose user step is a page (docs/issuance.md: the #decline button)',
  ),
  fapi(
    HI,
    'ensure-authorization-request-without-state-success',
    false,
    'An authorization request without state succeeds',
  ),
  fapi(
    HI,
    'access-token-type-header-case-sensitivity',
    false,
    'The resource endpoint takes the token type of the Authorization header in any case',
  ),
  fapi(HI, 'check-dpop-proof-nbf-exp', false, 'DPoP proofs carrying nbf and exp are handled'),
  fapi(
    HI,
    'ensure-dpopproof-with-iat-10seconds-before-succeeds',
    false,
    'DPoP proofs issued 10 seconds ago are accepted',
  ),
  fapi(
    HI,
    'ensure-dpopproof-with-iat-10seconds-after-succeeds',
    false,
    'DPoP proofs issued 10 seconds in the future are accepted',
  ),
  fapi(
    HI,
    'ensure-mismatched-dpop-jkt-fails',
    true,
    "A PAR request whose dpop_jkt is not the DPoP proof's key is refused",
  ),
  fapi(
    HI,
    'ensure-token-endpoint-fails-with-mismatched-dpop-proof-jkt',
    true,
    'DPoP proofs signed by different keys at PAR and token are refused at the token endpoint',
  ),
  fapi(
    HI,
    'ensure-token-endpoint-fails-with-mismatched-dpop-jkt',
    true,
    "A dpop_jkt that is not the token request's DPoP key is refused at the token endpoint",
  ),
  fapi(
    HI,
    'ensure-dpopproof-at-par-endpoint-binding-success',
    false,
    'The same DPoP key at PAR and token binds the authorization code',
    haipScenario(['@HAIP-1.0-4.1'], [HAIP_FLOW]),
    'the simulated wallet signs the DPoP proofs of its pushed request and of its token request with one key',
  ),
  fapi(
    HI,
    'ensure-dpop-auth-code-binding-success',
    false,
    'A dpop_jkt matching the DPoP proofs at PAR and token succeeds',
  ),
  fapi(
    HI,
    'ensure-different-state-inside-and-outside-request-object',
    true,
    'A state outside the request object that differs from the one inside is refused or ignored',
  ),
  fapi(
    HI,
    'ensure-authorization-request-with-long-state',
    false,
    'A long state is either refused with invalid_request or returned intact',
  ),
  fapi(
    HI,
    'state-only-outside-request-object-not-used',
    true,
    'A state passed only outside the request object is not used',
  ),
  fapi(
    HI,
    'ensure-request-object-without-redirect-uri-fails',
    true,
    'A request object without redirect_uri is refused',
  ),
  fapi(
    HI,
    'plain-fapi-tolerate-unregistered-redirect-uri',
    false,
    'An unregistered redirect_uri is tolerated (RFC 9126) or refused with an error page',
  ),
  fapi(
    HI,
    'ensure-unsigned-authorization-request-without-using-par-fails',
    true,
    'An unsigned authorization request that bypasses PAR is refused',
    haipScenario(['@RFC9126-5'], [HAIP_AUTHORIZE_REFUSALS]),
  ),
  fapi(
    HI,
    'ensure-redirect-uri-in-authorization-request',
    true,
    'An authorization request without redirect_uri is refused',
  ),
  fapi(
    HI,
    'ensure-response-type-code-idtoken-fails',
    true,
    'response_type "code id_token" is refused',
    haipScenario(['@RFC6749-4.1.2.1'], [HAIP_PAR_REFUSALS]),
    'refused at PAR (unsupported_response_type)',
  ),
  fapi(
    HI,
    'ensure-response-type-token-fails',
    true,
    'response_type "token" is refused',
    haipScenario(['@RFC6749-4.1.2.1'], [HAIP_PAR_REFUSALS]),
    'refused at PAR (unsupported_response_type)',
  ),
  fapi(
    HI,
    'ensure-client-id-in-token-endpoint',
    true,
    "A token request naming another client's client_id is refused as invalid_client",
  ),
  fapi(
    HI,
    'ensure-holder-of-key-required',
    true,
    'A token request without DPoP or mTLS is refused; every endpoint keeps to the TLS versions and ciphers FAPI 2.0 allows',
    undefined,
    UNIT_TESTED('a token request without a DPoP proof (invalid_dpop_proof)'),
  ),
  fapi(
    HI,
    'ensure-authorization-code-is-bound-to-client',
    true,
    "An authorization code redeemed with another client's credentials is refused",
  ),
  fapi(
    HI,
    'attempt-reuse-authorization-code-after-one-second',
    true,
    'An authorization code redeemed a second time is refused with invalid_grant',
    haipScenario(['@RFC6749-10.5'], [HAIP_MISBEHAVIOURS]),
    'the simulated wallet misbehaving with code-replay redeems the code again at once, not a second later; that the token the code gave is then revoked is tested in test/service/oid4vci/authorization-code.test.ts',
  ),
  fapi(
    HI,
    'ensure-token-endpoint-fails-with-expired-auth-code',
    true,
    'An authorization code used after its lifetime is refused with invalid_grant',
  ),
  fapi(
    HI,
    'dpop-negative-tests',
    true,
    'DPoP proofs breaking the rules of RFC 9449 (method, URL, iat, jti, ath, key) are refused',
    {
      kind: 'partial',
      tags: ['@RFC9449-4.3', '@RFC9449-11.1', '@RFC9449-7.2'],
      scenarios: [HAIP_MISBEHAVIOURS, HAIP_BEARER],
      why: 'the scenarios break htm, htu and jti at the token endpoint and present a bound token as Bearer; not iat, ath or the key of a proof at the credential endpoint (the service refuses a proof without ath or by another key, tested in test/service/oid4vci/authorization-code.test.ts)',
    },
  ),
  fapi(HI, 'refresh-token', false, 'Refresh tokens behave as FAPI 2.0 requires', {
    kind: 'none',
    why: "vc-harness's issuer hands out no refresh token (HAIP recommends them for credential refresh; no issue yet)",
  }),
  fapi(
    HI,
    'par-ensure-reused-request-uri-prior-to-auth-completion-succeeds',
    false,
    'A request_uri visited twice before the user finishes is still served',
  ),
  fapi(
    HI,
    'par-attempt-reuse-request_uri',
    true,
    'A request_uri used a second time is refused (PAR says it should be one-time)',
    haipScenario(['@RFC9126-4'], [HAIP_AUTHORIZE_REFUSALS]),
  ),
  fapi(HI, 'par-attempt-to-use-expired-request_uri', true, 'An expired request_uri is refused'),
  fapi(
    HI,
    'par-attempt-to-use-request_uri-for-different-client',
    true,
    "One client's request_uri used by another client is refused",
    haipScenario(['@RFC9126-4'], [HAIP_AUTHORIZE_REFUSALS]),
  ),
  fapi(
    HI,
    'par-authorization-request-containing-request_uri-form-param',
    true,
    'A PAR request carrying a request_uri parameter is refused',
    haipScenario(['@RFC9126-2.1'], [HAIP_PAR_REFUSALS]),
  ),
  fapi(
    HI,
    'par-attempt-invalid-http-method',
    true,
    'A PAR request with another HTTP method than POST is refused',
  ),
  fapi(
    HI,
    'par-ensure-pkce-required',
    true,
    'A PAR request without PKCE is refused',
    haipScenario(['@RFC7636-4.4.1'], [HAIP_PAR_REFUSALS]),
  ),
  fapi(
    HI,
    'ensure-pkce-code-verifier-required',
    true,
    'A token request without code_verifier is refused with invalid_grant',
  ),
  fapi(
    HI,
    'incorrect-pkce-code-verifier-rejected',
    true,
    'A token request with a wrong code_verifier is refused with invalid_grant',
    haipScenario(['@RFC7636-4.6'], [HAIP_MISBEHAVIOURS]),
    'the simulated wallet misbehaving with pkce-verifier-mismatch',
  ),
  fapi(
    HI,
    'par-plain-pkce-rejected',
    true,
    'A PAR request with the plain PKCE method is refused',
    haipScenario(['@RFC7636-4.4.1'], [HAIP_PAR_REFUSALS]),
  ),
  fapi(
    HI,
    'par-without-duplicate-parameters',
    false,
    'An authorization request with only client_id and request_uri after PAR succeeds',
    haipScenario(['@RFC9126-4'], [HAIP_AUTHORIZATION_RESPONSE]),
    'the client follows the authorization endpoint with client_id and request_uri only',
  ),
]

// VCIWalletTestPlanHaip: vciFapi2SPFinalClientTestModules() (the FAPI 2.0 client plan's modules, less the
// id_token, JARM and profile-specific ones).
const HAIP_WALLET_FAPI: OidfModule[] = [
  fapi(
    HW,
    'client-test-happy-path',
    false,
    'The client completes discovery, PAR, the authorization code and a sender-constrained token',
    { kind: 'wallet-case', ids: ['issuance-haip:positive'] },
  ),
  fapi(
    HW,
    'client-test-discovery-issuer-mismatch',
    true,
    'The client refuses authorization server metadata whose issuer is not the URL it was fetched for',
    {
      kind: 'partial',
      ids: ['issuance-1.0:metadata-issuer-mismatch'],
      why: "vc-harness checks that the wallet refuses credential issuer metadata naming another credential_issuer; the authorization server metadata's issuer is not tested",
    },
  ),
  fapi(
    HW,
    'client-test-invalid-authorization-response-iss',
    true,
    'The client refuses an authorization response with a wrong iss',
    { kind: 'wallet-case', ids: ['issuance-haip:authorization-response-wrong-iss'] },
  ),
  fapi(
    HW,
    'client-test-remove-authorization-response-iss',
    true,
    'The client refuses an authorization response without iss',
    { kind: 'wallet-case', ids: ['issuance-haip:authorization-response-without-iss'] },
  ),
  fapi(
    HW,
    'client-test-ensure-authorization-response-with-invalid-state-fails',
    true,
    'The client refuses an authorization response with a wrong state',
    { kind: 'wallet-case', ids: ['issuance-haip:authorization-response-wrong-state'] },
  ),
  fapi(
    HW,
    'client-test-ensure-authorization-response-with-invalid-missing-state-fails',
    true,
    'The client refuses an authorization response without the state it sent',
    {
      kind: 'partial',
      ids: ['issuance-haip:authorization-response-wrong-state'],
      why: 'the case answers with another state, not with none',
    },
  ),
  fapi(
    HW,
    'client-test-token-endpoint-response-without-expires_in',
    false,
    'The client copes with a token response without expires_in',
  ),
  fapi(
    HW,
    'client-test-token-type-case-insensitivity',
    false,
    'The client takes the token_type of the token response in any case',
  ),
  fapi(
    HW,
    'client-test-rs-dpop-auth-scheme-case-insensitivity',
    false,
    'The client takes the DPoP authentication scheme of a resource error in any case',
  ),
  fapi(
    HW,
    'client-test-happy-path-no-dpop-nonce',
    false,
    'The client completes the flow with DPoP but no server nonce',
    {
      kind: 'partial',
      ids: ['issuance-haip:positive'],
      why: "the case's issuer requires DPoP nonces throughout (the wallet retries with the server's); the flow without any server nonce is not run",
    },
  ),
]

/** The modules of the four HAIP plans (a module of several variant entries once). */
export const OIDF_HAIP_MODULES: readonly OidfModule[] = [
  ...HAIP_VERIFIER,
  ...HAIP_ISSUER_VCI,
  ...HAIP_ISSUER_FAPI,
  ...HAIP_VP_WALLET,
  ...HAIP_WALLET_VCI,
  ...HAIP_WALLET_FAPI,
]

/** What vc-harness checks that the suite's plans do not. */
export interface BeyondOidf {
  topic: string
  /** what vc-harness checks, and what the suite has instead */
  what: string
  ids?: string[]
  tags?: string[]
}

export const BEYOND_OIDF: readonly BeyondOidf[] = [
  {
    topic: 'Automatic verdicts',
    what: "Every case is judged from the exchanges and the target's answers, in one CI command, with reports in JSON, Markdown and JUnit. The suite is a hosted Java service with a public HTTPS URL; its wallet negatives and its verifier's positive modules end in REVIEW until someone uploads a screenshot.",
  },
  {
    topic: 'A malicious issuer against the wallet',
    what: "The suite's OpenID4VCI wallet plan has no negative module: it never hands a wallet a bad credential. vc-harness does: metadata naming another credential issuer, a credential signed by a foreign key, bound to another holder, with a tampered disclosure, expired or revoked.",
    ids: [
      'issuance-1.0:metadata-issuer-mismatch',
      'issuance-1.0:credential-foreign-signature',
      'issuance-1.0:credential-other-holder',
      'issuance-1.0:sd-jwt-tampered-disclosure',
      'issuance-1.0:credential-expired',
      'issuance-1.0:credential-revoked',
      'issuance-draft15:metadata-issuer-mismatch',
      'issuance-draft15:credential-foreign-signature',
      'issuance-draft15:credential-other-holder',
      'issuance-draft15:credential-expired',
      'issuance-draft15:credential-revoked',
    ],
  },
  {
    topic: 'A malicious mdoc issuer against the wallet',
    what: "An mDL whose MSO is signed by a document signer outside the issuer's IACA, bound to another device key, with an element that no longer matches its digest, expired or revoked (ISO/IEC 18013-5 §9.3.1); the suite's wallet plans hand out no bad mdoc either.",
    ids: [
      'issuance-mdoc:credential-foreign-signature',
      'issuance-mdoc:credential-other-holder',
      'issuance-mdoc:mdoc-digest-mismatch',
      'issuance-mdoc:credential-expired',
      'issuance-mdoc:credential-revoked',
    ],
  },
  {
    topic: 'Requests a wallet must refuse, beyond the suite',
    what: 'A request reusing the nonce of one the wallet already answered, an expired request object, a response_uri on a foreign origin under x509_san_dns (the suite tests only the redirect_uri prefix).',
    ids: [
      'presentation-dcql:nonce-reused',
      'presentation-dcql:request-expired',
      'presentation-dcql:response-uri-foreign-origin-x509-san-dns',
      'presentation-pe:nonce-reused',
      'presentation-pe:request-expired',
    ],
  },
  {
    topic: 'A credential in a format the verifier did not ask for',
    what: 'The wallet must not present a credential it holds in another format than the request asks for.',
    ids: ['presentation-dcql:format-not-offered', 'presentation-pe:format-not-offered'],
  },
  {
    topic: 'Key proof negatives',
    what: "The suite's issuer plan breaks a key proof two ways (signature, nonce) and leaves it out once. vc-harness also sends a kid naming another key, alg none, the wrong typ, the wrong aud, an iat an hour old or ahead, a private key in jwk, and the draft singular proof to a 1.0 issuer.",
    ids: [
      'issuer:proof-foreign-kid',
      'issuer:proof-alg-none',
      'issuer:proof-wrong-typ',
      'issuer:proof-wrong-aud',
      'issuer:proof-stale-iat',
      'issuer:proof-future-iat',
      'issuer:proof-private-jwk',
      'issuer:proof-legacy-shape',
    ],
    tags: ['@OID4VCI-F.4', '@OID4VCI-1.0-F.4'],
  },
  {
    topic: 'Nonces, codes and tokens used twice or too late (issuer)',
    what: 'A c_nonce reused by another offer, a pre-authorized code redeemed twice, a wrong or missing tx_code, an access token used after it expired: the suite tests none of them for the pre-authorized code.',
    ids: [
      'issuer:nonce-reused',
      'issuer:code-replayed',
      'issuer:tx-code-wrong',
      'issuer:tx-code-missing',
      'issuer:token-expired',
    ],
    tags: ['@OID4VCI-6.1', '@OID4VCI-6.3'],
  },
  {
    topic: 'Draft 15 and draft 13 compatibility',
    what: "The suite tests only OpenID4VCI 1.0. vc-harness grades draft 15 wallets (metadata, c_nonce from the nonce endpoint), checks that an issuer's metadata is also where draft 15 wallets look, that a 1.0 issuer refuses the draft request shapes, and that our own issuer still serves draft 15 and draft 13 wallets.",
    ids: [
      'issuance-draft15:positive',
      'issuance-draft15:token-without-c-nonce',
      'issuer:metadata-appended',
      'issuer:credential-format-legacy',
    ],
    tags: ['@OID4VCI-8.2', '@OID4VCI-draft13-7.2'],
  },
  {
    topic: 'Presentation misbehaviours beyond the suite (verifier)',
    what: "The suite's verifier plan breaks the KB-JWT and the issuer signature. vc-harness also sends a VP signed by a foreign key, bound to another nonce or audience, replayed from an earlier request, a tampered, untrusted or revoked credential, a vp_token under a wrong query id, a changed disclosure, no KB-JWT, and the same response twice.",
    ids: [
      'verifier:vp-foreign-key',
      'verifier:vp-wrong-nonce',
      'verifier:vp-wrong-aud',
      'verifier:vp-replayed',
      'verifier:tampered-credential',
      'verifier:untrusted-issuer',
      'verifier:revoked-credential',
      'verifier:vp-token-wrong-id',
      'verifier:sd-tampered-disclosure',
      'verifier:kb-missing',
      'verifier:response-replayed',
    ],
  },
  {
    topic: 'mdoc presentations beyond the suite (verifier)',
    what: "The suite's verifier plan breaks an mdoc's SessionTranscript by its nonce. vc-harness also binds another client_id or response_uri, signs the DeviceAuthentication with another key than the MSO's device key, and changes a disclosed element after issuance.",
    ids: [
      'verifier:mdoc-wrong-client-id',
      'verifier:mdoc-wrong-response-uri',
      'verifier:mdoc-foreign-device-key',
      'verifier:mdoc-tampered-element',
    ],
  },
  {
    topic: 'The Digital Credentials API (wallet)',
    what: "Beyond the suite's expected_origins and multi-signed modules: a signed request without expected_origins (REQUIRED when signed), a multi-signed request none of whose signatures verifies, and every answer over the API posted back to vc-harness's verifier, which holds its presentations to origin:<origin>.",
    ids: [
      'presentation-dc-api:expected-origins-missing',
      'presentation-dc-api:multisigned-all-invalid',
      'presentation-dc-api:positive-unsigned',
    ],
    tags: ['@OID4VP-1.0-A.2'],
  },
  {
    topic: 'The origin binding over the Digital Credentials API (verifier)',
    what: "An answer over the API bound to another origin than the calling page's, bound to the client_id instead of origin:<origin> (which Appendix A.4 requires even for signed requests), or made for another request must be refused; the suite's verifier plan sends none of them.",
    ids: [
      'verifier:dc-api-foreign-origin',
      'verifier:dc-api-client-id-audience',
      'verifier:dc-api-wrong-request',
    ],
    tags: ['@OID4VP-1.0-A.4'],
  },
  {
    topic: 'Encrypted responses (verifier)',
    what: 'A plain response to a direct_post.jwt request, and a response encrypted to another key, must be refused; the suite sends neither.',
    ids: ['verifier:plain-response', 'verifier:jwe-wrong-key'],
    tags: ['@OID4VP-1.0-8.3'],
  },
  {
    topic: 'JWT VCs and Presentation Exchange',
    what: 'The suite covers dc+sd-jwt and ISO mdoc with DCQL. vc-harness also grades jwt_vc_json issuance and OpenID4VP draft 20 with Presentation Exchange, in wallets and verifiers (a presentation_submission that lies about its mapping).',
    ids: [
      'issuance-draft15:positive',
      'presentation-pe:positive',
      'presentation-pe:query-unsatisfiable',
      'verifier:lying-submission',
    ],
    tags: ['@PEX-input-evaluation', '@PEX-submission-requirements'],
  },
  {
    topic: 'Linked Data formats',
    what: 'ldp_vc credentials and ldp_vp presentations with Data Integrity and the Linked Data signature suites, including a term no @context defines added after signing; the suite has no Linked Data format.',
    ids: [
      'presentation-pe-ldp:positive',
      'presentation-pe-ldp:request-foreign-signature',
      'verifier:ldp-undefined-term',
    ],
    tags: ['@VC-DATA-INTEGRITY-2.4.3', '@LDP-ED25519-2018', '@VC-DI-EDDSA-3.2', '@VC-DI-ECDSA-3.2'],
  },
  {
    topic: 'Status lists',
    what: 'A wallet must refuse an already revoked credential and a verifier a revoked one (Token Status List, Bitstring Status List); our own issuer publishes them.',
    ids: [
      'issuance-1.0:credential-revoked',
      'issuance-draft15:credential-revoked',
      'verifier:revoked-credential',
    ],
    tags: ['@TokenStatusList-7', '@BitstringStatusList'],
  },
  {
    topic: 'The relying-party interface',
    what: 'The conformance scenarios grade a deployment of the interface a relying party calls to open offers and verification sessions, read their outcome and receive webhooks (docs/interface.md): tenant isolation, roles, limits and signed webhooks. The suite has no counterpart.',
    tags: ['@interface-5', '@StandardWebhooks'],
  },
]

export interface CoverageCount {
  modules: number
  covered: number
  partial: number
  missing: number
  negatives: number
  negativesCovered: number
  negativesPartial: number
}

/** The coverage of a module before the issuer and verifier test plans. */
export const coverageBefore = (m: OidfModule): Coverage => m.before ?? m.coverage

/** Counts the modules by coverage, now (`after`) or before the issuer and verifier test plans. */
export function countCoverage(
  modules: readonly OidfModule[],
  when: 'before' | 'after' = 'after',
): CoverageCount {
  const count: CoverageCount = {
    modules: 0,
    covered: 0,
    partial: 0,
    missing: 0,
    negatives: 0,
    negativesCovered: 0,
    negativesPartial: 0,
  }
  for (const m of modules) {
    const c = when === 'before' ? coverageBefore(m) : m.coverage
    count.modules++
    if (m.negative) count.negatives++
    if (isCovered(c)) {
      count.covered++
      if (m.negative) count.negativesCovered++
    } else if (c.kind === 'partial') {
      count.partial++
      if (m.negative) count.negativesPartial++
    } else count.missing++
  }
  return count
}
