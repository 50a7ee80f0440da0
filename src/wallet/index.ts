// Public entry of the simulated wallet (see README.md in this folder).

export { LD_PROOF_TYPES, type LdProofType } from '../formats/ldp-vc/suites.ts'
export {
  type AccessAuthorization,
  bearerAuthorization,
  DpopProver,
  dpopAuthorization,
} from './access-authorization.ts'
export { createWalletAgent, KEY_TYPE_INFO, P256KeyDIDProvider, type WalletAgent } from './agent.ts'
export { CredentialStatusError } from './credential-status.ts'
export { type ParsedDeepLink, parseDeepLink } from './deep-link.ts'
export { WalletProtocolError, type WalletStep, WalletUsageError } from './errors.ts'
export { freshProofKey, type ProofKey } from './holder-keys.ts'
export {
  DEFAULT_HTTP_LIMITS,
  type FetchLike,
  HttpLimitError,
  type HttpLimitKind,
  type HttpLimits,
} from './http.ts'
export {
  type CredentialOffer,
  type CredentialResult,
  type DeferredResult,
  IssuanceSession,
  type IssuedCredentials,
  type IssuerMetadata,
  type NotificationEvent,
  type PendingCredentials,
  type RequestCredentialOptions,
  type Sleep,
  type StartIssuanceOptions,
  type TokenResponse,
} from './issuance.ts'
export {
  AuthorizationCodeFlow,
  type AuthorizationGrant,
  type AuthorizationOptions,
  checkAuthorizationResponse,
  chooseFlow,
  DEFAULT_REDIRECT_URI,
  defaultClientId,
  type ExpectedAuthorizationResponse,
  ISSUANCE_FLOWS,
  type IssuanceFlow,
  type UserStep,
  walletProviderFromJwk,
} from './issuance-authorization.ts'
export { ISSUANCE_PROTOCOLS, type IssuanceProtocol, IssuerMismatchError } from './issuance-v1.ts'
export { type ProofPlan, planProof, V1_PROOF_TYPES, type V1ProofType } from './key-attestation.ts'
export { MdocReceiveError, verifyReceivedMdoc } from './mdoc-receive.ts'
export {
  AUTHORIZATION_MISBEHAVIOUR_HELP,
  AUTHORIZATION_MISBEHAVIOURS,
  type AuthorizationMisbehaviour,
  DC_API_MISBEHAVIOUR_HELP,
  DC_API_PRESENTATION_MISBEHAVIOURS,
  FOREIGN_ORIGIN,
  type IssuanceMisbehaviour,
  isAuthorizationMisbehaviour,
  isMisbehaviour,
  isPresentationMisbehaviour,
  KEY_ATTESTATION_FOREIGN_KEY_HELP,
  MDOC_PRESENTATION_MISBEHAVIOURS,
  MISBEHAVIOURS,
  type Misbehaviour,
  PE_ONLY_PRESENTATION_MISBEHAVIOURS,
  PRESENTATION_MISBEHAVIOURS,
  type PresentationMisbehaviour,
  V1_ONLY_MISBEHAVIOURS,
  V1_ONLY_PRESENTATION_MISBEHAVIOURS,
  type V1OnlyPresentationMisbehaviour,
  WRONG_AUDIENCE,
} from './misbehaviour.ts'
export {
  ACCESS_DENIED_DESCRIPTION,
  DcqlNotSupportedError,
  type PresentationResult,
  PresentationSession,
  type PresentStep,
  type RespondOptions,
  type StartPresentationOptions,
} from './presentation.ts'
export {
  DC_API_CLIENT_ID_PREFIXES,
  type DcApiInput,
  type DcApiPresentationResult,
  type DcApiSignatureOutcome,
  dcApiErrorResponse,
  isDcApiRefusal,
  type PresentDcApiOptions,
  pickDcApiRequest,
  type ResolvedDcApiRequest,
  resolveDcApiRequest,
} from './presentation-dc-api.ts'
export {
  type ClaimPath,
  type DcqlChoice,
  type DcqlSelection,
  DcqlUnsatisfiedError,
  selectForDcql,
} from './presentation-dcql.ts'
export {
  type AcceptedLdProofs,
  buildLdpVp,
  chooseLdProofType,
  proofTypesFor,
} from './presentation-ldp.ts'
export { linkKind, type ParsedPresentationLink, parsePresentationLink } from './presentation-link.ts'
export { type DescriptorMatch, NoMatchingCredentialsError, type Selection } from './presentation-select.ts'
export { PresentationSessionV1, type RespondV1Options } from './presentation-v1.ts'
export {
  type ClientIdPrefix,
  isV1Link,
  type ResolvedRequestV1,
  SUPPORTED_CLIENT_ID_PREFIXES,
  walletMetadata,
} from './presentation-v1-request.ts'
export type { VpTokenV1 } from './presentation-v1-response.ts'
export type { DescriptorMapEntry, PresentationSubmission } from './presentation-vp.ts'
export { SdJwtReceiveError, verifyReceivedSdJwt } from './sd-jwt-receive.ts'
export { ShareNotAllowedError, type SharePolicy } from './share.ts'
export {
  HOLDER_KEY_TYPES,
  type HolderKeyType,
  type StoredCredential,
  type StoredFormat,
  WalletFileError,
} from './store.ts'
export {
  MAX_ANSWERED_NONCES,
  type OpenOptions,
  type OpenResult,
  PresentationDeclinedError,
  type PresentOptions,
  type ReceiveOptions,
  type ReceiveResult,
  type ReceiveStep,
  Wallet,
  type WalletOptions,
} from './wallet.ts'
