// One OpenID4VP 1.0 Final presentation, step by step: PresentationSessionV1.start resolves and verifies the
// request (presentation-v1-request.ts), select() matches the DCQL query against the held credentials
// (presentation-dcql.ts), respond() builds one presentation per chosen credential — an SD-JWT with only the
// selected disclosures and a KB-JWT (presentation-sd-jwt.ts), or a JWT VP of a jwt_vc_json credential
// (presentation-vp.ts) — keys them by credential query id and posts them with direct_post or direct_post.jwt
// (presentation-v1-response.ts); an mdoc is a DeviceResponse bound to the request by its SessionTranscript
// (presentation-mdoc.ts). A misbehaviour changes one thing of the first presentation of its kind, or of the
// response around them. buildDcqlAnswer (selection and presentations, bound to an AnswerBinding) is shared
// with the answer over the Digital Credentials API (presentation-dc-api.ts), which binds the origin instead.

import type { DcqlQuery } from 'dcql'
import type { FormatId } from '../formats/registry.ts'
import { MDOC_FORMAT } from '../shared/mdoc.ts'
import { SD_JWT_VC_TYP } from '../shared/wire.ts'
import { WalletProtocolError, WalletUsageError } from './errors.ts'
import {
  assertPresentationMisbehaviours,
  DC_API_PRESENTATION_MISBEHAVIOURS,
  EXCLUSIVE_PRESENTATION_MISBEHAVIOURS,
  JWT_VP_MISBEHAVIOURS,
  LDP_VP_MISBEHAVIOURS,
  MDOC_PRESENTATION_MISBEHAVIOURS,
  PE_ONLY_PRESENTATION_MISBEHAVIOURS,
  type PresentationMisbehaviour,
  SD_JWT_PRESENTATION_MISBEHAVIOURS,
} from './misbehaviour.ts'
import {
  ACCESS_DENIED_DESCRIPTION,
  type PresentationContext,
  type PresentationResult,
  type PresentStep,
  postAuthorizationResponse,
  presentationResult,
  type RespondOptions,
  type StartPresentationOptions,
} from './presentation.ts'
import type { AnswerBinding } from './presentation-binding.ts'
import { thumbprintOf } from './presentation-binding.ts'
import {
  type DcqlChoice,
  type DcqlSelection,
  DcqlUnsatisfiedError,
  selectForDcql,
} from './presentation-dcql.ts'
import {
  type AcceptedLdProofs,
  buildLdpVp,
  chooseLdProofType,
  dcqlAcceptedLdProofs,
} from './presentation-ldp.ts'
import { parsePresentationLink } from './presentation-link.ts'
import { presentMdocCredential } from './presentation-mdoc.ts'
import { presentSdJwt } from './presentation-sd-jwt.ts'
import { type ClientIdPrefix, type ResolvedRequestV1, resolveRequestV1 } from './presentation-v1-request.ts'
import {
  directPostForm,
  directPostJwtForm,
  encryptResponse,
  type JweHeader,
  responsePayload,
  type VpTokenV1,
} from './presentation-v1-response.ts'
import { buildVpToken, errorForm } from './presentation-vp.ts'
import { tamperOf } from './tamper.ts'

/** `onUnsatisfied` (RespondOptions): 'access-denied' answers access_denied naming the unsatisfied queries. */
export type RespondV1Options = RespondOptions

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** How the wallet presents a credential of one format in a 1.0 vp_token (OpenID4VP 1.0 Appendix B). */
interface Presenter {
  /** The misbehaviours that change this format's presentation. */
  misbehaviours: readonly PresentationMisbehaviour[]
  /** What a misbehaviour of this format changes, for the refusal when the answer presents none of it. */
  changes: string
  /** A hint added to that refusal, given every misbehaviour asked. */
  hint?(all: readonly PresentationMisbehaviour[]): string
  present(input: {
    choice: DcqlChoice
    misbehave: readonly PresentationMisbehaviour[]
    /** nonce, audience (the full client_id, or origin:<origin> over the DC API), the mdoc handover */
    binding: AnswerBinding
    iat: number
    wallet: PresentationContext
    /** ldp_vc: the proof type the caller forces, and what the verifier's client_metadata accepts */
    ldp: { forced: string | undefined; accepted: AcceptedLdProofs | undefined }
  }): Promise<string | Record<string, unknown>>
}

/** One presenter per format of the registry: a format without one does not compile. */
const PRESENTERS: Record<FormatId, Presenter> = {
  // B.3: the SD-JWT VC with the disclosures the query asks for and a KB-JWT (nonce, aud = the client_id)
  [SD_JWT_VC_TYP]: {
    misbehaviours: SD_JWT_PRESENTATION_MISBEHAVIOURS,
    changes: 'an SD-JWT VC presentation',
    async present({ choice, misbehave, binding, iat, wallet }) {
      const { presentation } = await presentSdJwt({
        credential: choice.credential.credential,
        claimPaths: choice.claimPaths,
        nonce: binding.nonce,
        audience: binding.audience,
        iat,
        // the key cnf.jwk names: the wallet's own, or the further key of a batch copy (OpenID4VCI 1.0 §3.3.2)
        signer: wallet.jwtSigner(choice.credential.subject),
        misbehave,
      })
      return presentation
    },
  },
  // B.1.3.1.5: a JWT VP of the credential as issued (nonce, aud = the client_id)
  jwt_vc_json: {
    misbehaviours: JWT_VP_MISBEHAVIOURS,
    changes: 'a JWT VP (jwt_vc_json)',
    hint: (all) =>
      all.some((m) => m === 'vp-wrong-nonce' || m === 'vp-wrong-aud')
        ? ' (kb-wrong-nonce / kb-wrong-aud are the SD-JWT ones)'
        : '',
    async present({ choice, misbehave, binding, iat, wallet }) {
      let credential = choice.credential.credential
      try {
        credential = tamperOf(misbehave).apply('vp.credentials', [credential])[0] ?? credential
      } catch (error) {
        throw new WalletUsageError(`cannot apply ${misbehave.join(', ')}: ${message(error)}`)
      }
      // the holder the credential's sub names, signing with its key (a batch copy's further key, or the own one)
      const holder = wallet.isBatchKey(choice.credential.subject) ? choice.credential.subject : wallet.did
      return buildVpToken(wallet.jwtSigner(holder), {
        holder,
        audience: binding.audience,
        nonce: binding.nonce,
        presentation: { verifiableCredential: [credential] },
        misbehave,
        now: () => iat,
      })
    },
  },
  // B.1.3.2: an ldp_vp of the credential as issued (challenge = nonce, domain = the client_id), its proof type
  // the first of the verifier's vp_formats_supported.ldp_vc (B.1.3.2.3) that the holder key makes
  ldp_vc: {
    misbehaviours: LDP_VP_MISBEHAVIOURS,
    changes: 'a Linked Data presentation (ldp_vp)',
    async present({ choice, misbehave, binding, iat, wallet, ldp }) {
      const proofType = chooseLdProofType(wallet.keyType, ldp.accepted, ldp.forced ?? wallet.ldpProofType)
      if (!proofType)
        throw new WalletUsageError(
          `the verifier's vp_formats_supported.ldp_vc accepts proof types ${ldp.accepted?.proofTypes.join(', ')}${ldp.accepted?.cryptosuites ? ` (cryptosuites ${ldp.accepted.cryptosuites.join(', ')})` : ''}, none of which this wallet's ${wallet.keyType} key makes`,
        )
      return buildLdpVp({
        holder: await wallet.ldPresenter(choice.credential.subject),
        credentials: [JSON.parse(choice.credential.credential) as Record<string, unknown>],
        nonce: binding.nonce,
        audience: binding.audience,
        proofType,
        misbehave,
        now: iat * 1000,
      })
    },
  },
  // B.2.6: a DeviceResponse of the mdoc with the elements the query asks for, device-signed over the
  // SessionTranscript of this request (client_id, nonce, the encryption key's thumbprint, response_uri; over
  // the DC API the origin, nonce and thumbprint, B.2.6.2)
  [MDOC_FORMAT]: {
    misbehaviours: MDOC_PRESENTATION_MISBEHAVIOURS,
    changes: 'an mdoc presentation (mso_mdoc DeviceResponse)',
    async present({ choice, misbehave, binding, wallet }) {
      const { mdoc } = binding
      const { presentation } = await presentMdocCredential({
        credential: choice.credential.credential,
        claimPaths: choice.claimPaths,
        ...(mdoc.kind === 'dc_api'
          ? { origin: mdoc.origin }
          : { clientId: mdoc.clientId, responseUri: mdoc.responseUri }),
        nonce: binding.nonce,
        jwkThumbprint: binding.jwkThumbprint,
        signer: wallet.deviceSigner(choice.credential.subject),
        misbehave,
      })
      return presentation
    },
  },
}

/**
 * Which presentation each format misbehaviour changes: the first of the answer whose format's presenter takes
 * it (the shared vp- ones and tampered-credential / untrusted-issuer: a JWT VP or an ldp_vp, whichever comes
 * first in the vp_token). One that no presentation of the answer takes is a WalletUsageError.
 */
function aimMisbehaviours(
  choices: readonly DcqlChoice[],
  misbehave: readonly PresentationMisbehaviour[],
): Map<DcqlChoice, PresentationMisbehaviour[]> {
  const presenters = Object.entries(PRESENTERS) as [FormatId, Presenter][]
  const aimedAt = new Map<DcqlChoice, PresentationMisbehaviour[]>()
  const missing = new Map<string, { takers: [FormatId, Presenter][]; aimed: PresentationMisbehaviour[] }>()
  for (const m of misbehave) {
    const takers = presenters.filter(([, p]) => p.misbehaviours.includes(m))
    if (takers.length === 0) continue
    const target = choices.find((c) => takers.some(([format]) => format === c.format))
    if (target) {
      aimedAt.set(target, [...(aimedAt.get(target) ?? []), m])
      continue
    }
    const key = takers.map(([format]) => format).join(' or ')
    const group = missing.get(key) ?? { takers, aimed: [] }
    group.aimed.push(m)
    missing.set(key, group)
  }
  const [first] = missing.entries()
  if (first) {
    const [formats, { takers, aimed }] = first
    const hints = takers.map(([, p]) => p.hint?.(misbehave) ?? '').join('')
    throw new WalletUsageError(
      `misbehaviour ${aimed.join(', ')} changes ${takers.map(([, p]) => p.changes).join(' or ')}, but this answer presents no ${formats} credential${hints}`,
    )
  }
  return aimedAt
}

/**
 * The misbehaviours a 1.0 answer can show, checked before anything is built: none of the Presentation
 * Exchange's, an exclusive one alone (with expired-session at most), the DC API ones only over the DC API.
 */
export function checkAnswerMisbehaviours(
  misbehave: readonly PresentationMisbehaviour[],
  over: 'link' | 'dc_api',
): void {
  const peOnly = misbehave.filter((m) => PE_ONLY_PRESENTATION_MISBEHAVIOURS.includes(m))
  if (peOnly.length > 0) {
    throw new WalletUsageError(
      `misbehaviour ${peOnly.join(', ')} belongs to the Presentation Exchange (draft 20) answer; an OpenID4VP 1.0 answer has no presentation_submission, Bitstring status check or remembered JWT VP for it`,
    )
  }
  if (over === 'link') {
    const dcApiOnly = misbehave.filter((m) => DC_API_PRESENTATION_MISBEHAVIOURS.includes(m))
    if (dcApiOnly.length > 0) {
      throw new WalletUsageError(
        `misbehaviour ${dcApiOnly.join(', ')} changes an OpenID4VP 1.0 answer over the Digital Credentials API (Appendix A; Wallet.presentDcApi, vc-harness wallet dc-api); this is a request by link`,
      )
    }
  }
  const exclusive = misbehave.filter((m) => EXCLUSIVE_PRESENTATION_MISBEHAVIOURS.includes(m))
  const others = misbehave.filter((m) => m !== 'expired-session' && !exclusive.includes(m))
  if (exclusive.length === 1 && others.length > 0) {
    throw new WalletUsageError(
      `misbehaviour ${exclusive[0]} replaces the whole answer: combine it with expired-session only, not with ${others.join(', ')}`,
    )
  }
}

/** What buildDcqlAnswer needs: the query, what the presentations are bound to, the verifier's metadata. */
export interface DcqlAnswerInput {
  wallet: PresentationContext
  dcqlQuery: DcqlQuery
  binding: AnswerBinding
  /** the request's client_metadata (an ldp_vp's proof type: vp_formats_supported.ldp_vc) */
  clientMetadata: unknown
  /** the presentations' `iat`, seconds */
  iat: number
  misbehave: readonly PresentationMisbehaviour[]
  ldProofType?: string | undefined
  onUnsatisfied?: 'throw' | 'access-denied' | undefined
  step: (step: PresentStep, detail?: unknown) => void
}

/** The vp_token of an answer, or why the wallet declines ('access-denied' when nothing held satisfies the query). */
export type DcqlAnswer =
  | { kind: 'vp_token'; vpToken: VpTokenV1; presented: string[] }
  | { kind: 'unsatisfied'; description: string }

/**
 * The vp_token of a 1.0 answer, however it travels (a link's direct_post, the DC API): the DCQL selection
 * (presentation-dcql.ts; the careless wallet presents its first credential when nothing matches), one
 * presentation per chosen credential by its format's presenter, all bound to `binding`, keyed by credential
 * query id (§8.1); each format misbehaviour aimed at the first presentation that takes it.
 */
export async function buildDcqlAnswer(input: DcqlAnswerInput): Promise<DcqlAnswer> {
  const { wallet, misbehave, step } = input
  let selection: DcqlSelection
  try {
    selection = await selectForDcql(input.dcqlQuery, wallet.credentials())
  } catch (error) {
    if (error instanceof DcqlUnsatisfiedError && wallet.trustEverything) {
      selection = carelessSelection(wallet, input.dcqlQuery, error)
    } else if (error instanceof DcqlUnsatisfiedError && input.onUnsatisfied === 'access-denied') {
      step('select', { unsatisfied: error.credentialQueries })
      return {
        kind: 'unsatisfied',
        description: `the wallet holds no credential for the credential quer${error.credentialQueries.length === 1 ? 'y' : 'ies'} ${error.credentialQueries.join(', ')}`,
      }
    } else {
      throw error
    }
  }
  step('select', {
    dcql: selection.answers.flatMap((a) =>
      a.credentials.map((c) => ({ query: a.queryId, credential: c.credential.id, claims: c.claimPaths })),
    ),
  })
  const choices = selection.answers.flatMap((a) => a.credentials)
  const aimedAt = aimMisbehaviours(choices, misbehave)
  const accepted = dcqlAcceptedLdProofs(input.clientMetadata)
  let vpToken: VpTokenV1 = {}
  for (const answer of selection.answers) {
    const presentations: VpTokenV1[string] = []
    for (const choice of answer.credentials) {
      presentations.push(
        await PRESENTERS[choice.format].present({
          choice,
          misbehave: aimedAt.get(choice) ?? [],
          binding: input.binding,
          iat: input.iat,
          wallet,
          ldp: { forced: input.ldProofType, accepted },
        }),
      )
    }
    vpToken[answer.queryId] = presentations
  }
  vpToken = tamperOf(misbehave).apply('vp_token', vpToken)
  return { kind: 'vp_token', vpToken, presented: choices.map((c) => c.credential.id) }
}

/**
 * The careless wallet (trustEverything) when nothing matches: the first held credential anyway, under every
 * credential query id, disclosing no selectively disclosable claim.
 */
function carelessSelection(
  wallet: PresentationContext,
  dcqlQuery: DcqlQuery,
  unsatisfied: DcqlUnsatisfiedError,
): DcqlSelection {
  const first = wallet.credentials()[0]
  if (!first) throw unsatisfied
  const format = first.format as DcqlChoice['format']
  return {
    answers: dcqlQuery.credentials.map(({ id: queryId }) => ({
      queryId,
      credentials: [{ queryId, format, credential: first, claimPaths: [], claimSetIndex: undefined }],
    })),
  }
}

export class PresentationSessionV1 {
  readonly profile = '1.0' as const
  /** the link as scanned */
  readonly link: string
  /** everything resolved and verified about the request */
  readonly request: ResolvedRequestV1
  /** the full client_id, prefix included */
  readonly clientId: string
  readonly prefix: ClientIdPrefix
  readonly nonce: string
  readonly state: string | undefined
  readonly responseUri: string
  readonly responseMode: ResolvedRequestV1['responseMode']
  readonly dcqlQuery: DcqlQuery
  /** the last path segment of response_uri */
  readonly sessionId: string
  /** `exp` of the request object, ms */
  readonly expiresAt: number | undefined

  private readonly wallet: PresentationContext
  private readonly now: () => number

  private constructor(
    wallet: PresentationContext,
    link: string,
    request: ResolvedRequestV1,
    now: () => number,
  ) {
    this.wallet = wallet
    this.link = link
    this.request = request
    this.clientId = request.clientId
    this.prefix = request.prefix
    this.nonce = request.nonce
    this.state = request.state
    this.responseUri = request.responseUri
    this.responseMode = request.responseMode
    this.dcqlQuery = request.dcqlQuery
    this.sessionId = decodeURIComponent(
      new URL(request.responseUri).pathname.split('/').filter(Boolean).at(-1) ?? '',
    )
    this.expiresAt = request.expiresAt
    this.now = now
  }

  /** Resolves the request (request_uri get/post, or by value) and verifies it per its client identifier prefix. */
  static async start(
    wallet: PresentationContext,
    link: string,
    opts: StartPresentationOptions = {},
  ): Promise<PresentationSessionV1> {
    const misbehave = assertPresentationMisbehaviours(opts.misbehave)
    const now = opts.now ?? (() => Date.now())
    const parsed = parsePresentationLink(link)
    const request = await resolveRequestV1(parsed, {
      http: wallet.http,
      trustAnchors: wallet.trustAnchors,
      now: now(),
      allowExpired: tamperOf(misbehave).acts('request.skipExpiry'),
      holderAlg: wallet.alg,
      answeredNonce: (nonce) => wallet.answeredNonce(nonce),
      trustEverything: wallet.trustEverything,
    })
    return new PresentationSessionV1(wallet, link, request, now)
  }

  /** The ids of the DCQL credential queries, in query order. */
  get queryIds(): string[] {
    return this.dcqlQuery.credentials.map((c) => c.id)
  }

  /** True when the request object's `exp` has passed on the wallet's clock. */
  get expired(): boolean {
    return this.expiresAt !== undefined && this.expiresAt <= this.now()
  }

  /** What a correct answer presents (nothing is sent); DcqlUnsatisfiedError when the query cannot be met. */
  select(): Promise<DcqlSelection> {
    return selectForDcql(this.dcqlQuery, this.wallet.credentials())
  }

  /**
   * Answers the request: the vp_token (or, for 'access-denied', an error answer) posted to response_uri with
   * the response mode the request asked for. A 2xx answer is the result; anything else a WalletProtocolError
   * step 'response'.
   */
  async respond(opts: RespondV1Options = {}): Promise<PresentationResult> {
    const misbehave = assertPresentationMisbehaviours(opts.misbehave)
    const tamper = tamperOf(misbehave)
    const step = opts.onStep ?? (() => {})
    checkAnswerMisbehaviours(misbehave, 'link')
    // the mode the answer is posted with; 'plain-response' is refused here unless direct_post.jwt was asked
    const responseMode = tamper.apply('response.mode', this.responseMode) as ResolvedRequestV1['responseMode']
    if (!tamper.acts('request.skipExpiry') && !this.wallet.trustEverything && this.expired) {
      throw new WalletProtocolError({
        step: 'request',
        status: this.request.status,
        error: 'invalid_request_object',
        errorDescription: `the request object expired at ${new Date(this.expiresAt as number).toISOString()}: not answering it (misbehaviour expired-session answers anyway)`,
      })
    }
    if (tamper.acts('response.decline')) {
      return this.decline(opts.errorDescription ?? ACCESS_DENIED_DESCRIPTION, step)
    }

    const built = await buildDcqlAnswer({
      wallet: this.wallet,
      dcqlQuery: this.dcqlQuery,
      binding: this.binding(),
      clientMetadata: this.request.payload.client_metadata,
      iat: Math.floor(this.now() / 1000),
      misbehave,
      ldProofType: opts.ldProofType,
      onUnsatisfied: opts.onUnsatisfied,
      step,
    })
    if (built.kind === 'unsatisfied') return this.decline(opts.errorDescription ?? built.description, step)
    const { vpToken } = built

    let form: Record<string, string>
    let encryption: JweHeader | undefined
    if (responseMode === 'direct_post.jwt') {
      const encrypted = await encryptResponse(
        responsePayload(vpToken, this.state),
        tamper.apply(
          'response.encryption',
          this.request.encryption as NonNullable<ResolvedRequestV1['encryption']>,
        ),
      )
      form = directPostJwtForm(encrypted.jwe)
      encryption = encrypted.header
    } else {
      form = directPostForm(vpToken, this.state)
    }
    // remembered before it leaves: a verifier that asks again with this nonce is refused (§14.1)
    if (!tamper.acts('response.forgetNonce')) await this.wallet.rememberAnsweredNonce(this.nonce)
    const answer = await postAuthorizationResponse(this, form, step, this.wallet.http)
    return {
      ...presentationResult(this, '1.0', 'verified', answer, form, built.presented),
      vpToken: JSON.stringify(vpToken),
      dcqlVpToken: vpToken,
      responseMode,
      ...(encryption && { encryption }),
    }
  }

  /**
   * What every presentation of the answer is bound to (B.3.6, B.1.3, B.2.6.1): the nonce, the full client_id,
   * the thumbprint of the key the request asks the answer to be encrypted to (the verifier's, as its session
   * knows it: 'plain-response' and 'jwe-wrong-key' change the encryption, not the handover), the response_uri.
   */
  private binding(): AnswerBinding {
    return {
      nonce: this.nonce,
      audience: this.clientId,
      jwkThumbprint: thumbprintOf(this.responseMode === 'direct_post.jwt', this.request.encryption?.jwk),
      mdoc: { kind: 'redirect', clientId: this.clientId, responseUri: this.responseUri },
    }
  }

  /**
   * The error answer (1.0 §8.5 access_denied). Sent form-encoded even for direct_post.jwt, as §8.3.1 allows an
   * unencrypted error response.
   */
  private async decline(
    description: string,
    step: (step: PresentStep, detail?: unknown) => void,
  ): Promise<PresentationResult> {
    const form = errorForm({ error: 'access_denied', errorDescription: description, state: this.state })
    const answer = await postAuthorizationResponse(this, form, step, this.wallet.http)
    return presentationResult(this, '1.0', 'rejected-by-wallet', answer, form, [])
  }
}
