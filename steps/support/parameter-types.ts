import { defineParameterType } from '@cucumber/cucumber'
import type { LdAlteration } from './linked-data.ts'
import type {
  PortalAction,
  ProcessAction,
  Role,
  RpRequest,
  TemplateAction,
  TemplateKind,
} from './security.ts'
import type { Caller, Spoiling, TemplateChoice } from './world-types.ts'

const CALLERS: Record<string, Caller> = {
  'the application': 'app',
  'the unlinked application': 'unlinkedApp',
  'the administrator': 'admin',
}

/** {caller}: whose API key of the scenario's tenant acts. */
defineParameterType({
  name: 'caller',
  regexp: /the unlinked application|the application|the administrator/,
  transformer: (text: string): Caller => CALLERS[text] as Caller,
})

const TEMPLATES: Record<string, TemplateChoice> = {
  'its own template': 'own',
  'another template of the tenant': 'other',
  'a template that does not exist': 'unknown',
}

/** {template}: which template the login's ssiconfig header names. */
defineParameterType({
  name: 'template',
  regexp: /its own template|another template of the tenant|a template that does not exist/,
  transformer: (text: string): TemplateChoice => TEMPLATES[text] as TemplateChoice,
})

/** {spoiling}: how a valid access token is made invalid. */
defineParameterType({
  name: 'spoiling',
  regexp: /a tampered signature|alg none|a signature by another key|garbage/,
  transformer: (text: string): Spoiling =>
    ({
      'a tampered signature': 'tampered signature',
      'alg none': 'alg none',
      'a signature by another key': 'foreign key',
      garbage: 'garbage',
    })[text] as Spoiling,
})

/** {misbehaviour}: one deliberate defect of the simulated wallet (src/wallet/README.md). */
defineParameterType({
  name: 'misbehaviour',
  regexp:
    /wrong-nonce|replayed-nonce|bad-signature|wrong-aud|expired-iat|replayed-code|wrong-tx-code|foreign-kid|missing-tx-code|jwk-with-private-key|wrong-typ|alg-none|legacy-proof|legacy-format-request|missing-proof/,
  transformer: (text: string) => text,
})

/** {issuanceProtocol}: the OpenID4VCI generation the wallet speaks (src/wallet/README.md). */
defineParameterType({
  name: 'issuanceProtocol',
  regexp: /OpenID4VCI 1\.0|draft 15/,
  transformer: (text: string) => (text === 'draft 15' ? 'draft15' : '1.0'),
})

/** {statusType}: a Token Status List status type (§7.1). */
defineParameterType({
  name: 'statusType',
  regexp: /VALID|INVALID|SUSPENDED/,
  transformer: (text: string) => text,
})

/** {keyType}: the holder key of the simulated wallet. */
defineParameterType({
  name: 'keyType',
  regexp: /Ed25519|P-256|secp256k1/,
  transformer: (text: string) => text,
})

/** {templateRole}: which of the tenant's issuance templates an offer is for. */
defineParameterType({
  name: 'templateRole',
  regexp: /the linked template|the tx_code template|the identity template|the template requiring an identity/,
  transformer: (text: string) =>
    ({
      'the linked template': 'linked',
      'the tx_code template': 'tx-code',
      'the identity template': 'identity',
      'the template requiring an identity': 'requires-identity',
    })[text],
})

/** {presentationMisbehaviour}: one deliberate defect of the wallet's OpenID4VP answer (src/wallet/README.md). */
defineParameterType({
  name: 'presentationMisbehaviour',
  regexp:
    /vp-wrong-nonce|vp-wrong-aud|vp-foreign-key|vp-replayed|tampered-credential|untrusted-issuer|revoked-credential|expired-session|lying-submission|access-denied|ldp-undefined-term/,
  transformer: (text: string) => text,
})

/** {verificationTemplate}: which of the tenant's verification templates a session is for. */
defineParameterType({
  name: 'verificationTemplate',
  regexp: /the degree check|the degree and identity check|the status-optional check/,
  transformer: (text: string) => text.replace(/^the /, ''),
})

// Tenant isolation, roles and limits (steps/security.steps.ts, steps/support/security.ts)

/** {role}: a key of another tenant, named without an article ("another tenant's administrator"). */
defineParameterType({
  name: 'role',
  regexp: /application|administrator/,
  transformer: (text: string): Role => (text === 'application' ? 'app' : 'admin'),
})

/** {processAction}: what a caller tries to do to the scenario's issuance process. */
defineParameterType({
  name: 'processAction',
  regexp: /read|submit the degree credential to|reject|revoke the credentials of/,
  transformer: (text: string): ProcessAction =>
    text === 'read' ? 'read' : text === 'reject' ? 'reject' : text.startsWith('submit') ? 'submit' : 'revoke',
})

/** {templateKind}: issuance or verification template. */
defineParameterType({
  name: 'templateKind',
  regexp: /issuance|verification/,
  transformer: (text: string): TemplateKind => text as TemplateKind,
})

/** {templateAction}: what another tenant tries to do to a template through the portal. */
defineParameterType({
  name: 'templateAction',
  regexp: /read|replace|delete/,
  transformer: (text: string): TemplateAction => text as TemplateAction,
})

/** {portalAction}: a portal call an application key tries. */
defineParameterType({
  name: 'portalAction',
  regexp: /list the API keys|create an API key|create an issuance template/,
  transformer: (text: string): PortalAction =>
    text === 'list the API keys'
      ? 'list keys'
      : text === 'create an API key'
        ? 'create key'
        : 'create template',
})

/** {rpRequest}: a relying-party request whose body a limits scenario bends. */
defineParameterType({
  name: 'rpRequest',
  regexp: /an offer request|a session request|a rejection|a submission|an API key request/,
  transformer: (text: string): RpRequest =>
    (
      ({
        'an offer request': 'offer',
        'a session request': 'session',
        'a rejection': 'rejection',
        'a submission': 'submission',
        'an API key request': 'api key',
      }) as const
    )[text] as RpRequest,
})

// OpenID4VP 1.0, the dcql profile (steps/dcql.steps.ts, steps/support/dcql.ts)

/** {dcqlMisbehaviour}: a deliberate defect of the wallet's OpenID4VP 1.0 answer (src/wallet/README.md). */
defineParameterType({
  name: 'dcqlMisbehaviour',
  regexp:
    /sd-tampered-disclosure|sd-extra-disclosure|kb-wrong-sd-hash|kb-wrong-nonce|kb-wrong-aud|kb-stale-iat|kb-missing|plain-response|vp-token-wrong-id|vp-wrong-nonce|vp-wrong-aud|vp-foreign-key|tampered-credential|untrusted-issuer|access-denied|mdoc-wrong-nonce|mdoc-wrong-client-id|mdoc-wrong-response-uri|mdoc-tampered-element|mdoc-extra-element|mdoc-foreign-device-key/,
  transformer: (text: string) => text,
})

/** {clientIdPrefix}: how a dcql verifier names itself (OpenID4VP 1.0 §5.9.3). */
defineParameterType({
  name: 'clientIdPrefix',
  regexp: /decentralized_identifier|x509_san_dns|x509_hash|redirect_uri/,
  transformer: (text: string) => text,
})

/** {responseMode}: how the wallet answers a dcql session (OpenID4VP 1.0 §8.2, §8.3). */
defineParameterType({
  name: 'responseMode',
  regexp: /direct_post\.jwt|direct_post/,
  transformer: (text: string) => text,
})

/** {ldProofType}: a Linked Data proof type (section 2.8's four) or a VC Data Integrity cryptosuite. */
defineParameterType({
  name: 'ldProofType',
  regexp:
    /Ed25519Signature2018|JsonWebSignature2020|EcdsaSecp256k1Signature2019|RsaSignature2018|eddsa-rdfc-2022|ecdsa-rdfc-2019/,
  transformer: (text: string) => text,
})

/** {ldKeyType}: the did:key type a Linked Data proof signs with. */
defineParameterType({
  name: 'ldKeyType',
  regexp: /Ed25519|P-256|P-384|secp256k1|RSA/,
  transformer: (text: string) => text,
})

/** {tenantAlg}: the tenant key an issuance template signs with (signingAlg; PS256 is an RSA key). */
defineParameterType({
  name: 'tenantAlg',
  regexp: /EdDSA|ES256K|ES256|PS256/,
  transformer: (text: string) => text,
})

const LD_ALTERATIONS: Record<string, LdAlteration> = {
  'its degree changed': 'degree changed',
  'a term no context defines added': 'undefined term',
  'an @context the verifier does not have added': 'unknown context',
}

/** {ldAlteration}: what changes in a signed ldp_vp before it is posted. */
defineParameterType({
  name: 'ldAlteration',
  regexp: /its degree changed|a term no context defines added|an @context the verifier does not have added/,
  transformer: (text: string): LdAlteration => LD_ALTERATIONS[text] as LdAlteration,
})
