// One OpenID4VP 1.0 Final presentation, step by step: PresentationSessionV1.start resolves and verifies the
// request (presentation-v1-request.ts), select() matches the DCQL query against the held credentials
// (presentation-dcql.ts), respond() builds one presentation per chosen credential — an SD-JWT with only the
// selected disclosures and a KB-JWT (presentation-sd-jwt.ts), or a JWT VP of a jwt_vc_json credential
// (presentation-vp.ts) — keys them by credential query id and posts them with direct_post or direct_post.jwt
// (presentation-v1-response.ts); an mdoc is a DeviceResponse bound to the request by its SessionTranscript
// (presentation-mdoc.ts). A misbehaviour changes one thing of the first presentation of its kind, or of the
// response around them.

import type { DcqlQuery } from 'dcql'
import type { FormatId } from '../formats/registry.ts'
import { jwkThumbprint } from '../shared/jws.ts'
import { MDOC_FORMAT } from '../shared/mdoc.ts'
import { SD_JWT_VC_TYP } from '../shared/wire.ts'
import { WalletProtocolError, WalletUsageError } from './errors.ts'
import {
  assertPresentationMisbehaviours,
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
    nonce: string
    /** the full client_id, prefix included */
    audience: string
    iat: number
    /** where the answer is posted (an mdoc's SessionTranscript binds it) */
    responseUri: string
    /**
     * base64url JWK SHA-256 thumbprint (RFC 7638) of the verifier's response encryption key when the request
     * asks for direct_post.jwt, else undefined (an mdoc's SessionTranscript binds it, B.2.6.1)
     */
    jwkThumbprint: string | undefined
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
    async present({ choice, misbehave, nonce, audience, iat, wallet }) {
      const { presentation } = await presentSdJwt({
        credential: choice.credential.credential,
        claimPaths: choice.claimPaths,
        nonce,
        audience,
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
    async present({ choice, misbehave, nonce, audience, iat, wallet }) {
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
        audience,
        nonce,
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
    async present({ choice, misbehave, nonce, audience, iat, wallet, ldp }) {
      const proofType = chooseLdProofType(wallet.keyType, ldp.accepted, ldp.forced ?? wallet.ldpProofType)
      if (!proofType)
        throw new WalletUsageError(
          `the verifier's vp_formats_supported.ldp_vc accepts proof types ${ldp.accepted?.proofTypes.join(', ')}${ldp.accepted?.cryptosuites ? ` (cryptosuites ${ldp.accepted.cryptosuites.join(', ')})` : ''}, none of which this wallet's ${wallet.keyType} key makes`,
        )
      return buildLdpVp({
        holder: await wallet.ldPresenter(choice.credential.subject),
        credentials: [JSON.parse(choice.credential.credential) as Record<string, unknown>],
        nonce,
        audience,
        proofType,
        misbehave,
        now: iat * 1000,
      })
    },
  },
  // B.2.6: a DeviceResponse of the mdoc with the elements the query asks for, device-signed over the
  // SessionTranscript of this request (client_id, nonce, the encryption key's thumbprint, response_uri)
  [MDOC_FORMAT]: {
    misbehaviours: MDOC_PRESENTATION_MISBEHAVIOURS,
    changes: 'an mdoc presentation (mso_mdoc DeviceResponse)',
    async present({ choice, misbehave, nonce, audience, responseUri, jwkThumbprint, wallet }) {
      const { presentation } = await presentMdocCredential({
        credential: choice.credential.credential,
        claimPaths: choice.claimPaths,
        clientId: audience,
        nonce,
        responseUri,
        jwkThumbprint,
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
    const peOnly = misbehave.filter((m) => PE_ONLY_PRESENTATION_MISBEHAVIOURS.includes(m))
    if (peOnly.length > 0) {
      throw new WalletUsageError(
        `misbehaviour ${peOnly.join(', ')} belongs to the Presentation Exchange (draft 20) answer; an OpenID4VP 1.0 answer has no presentation_submission, Bitstring status check or remembered JWT VP for it`,
      )
    }
    const exclusive = misbehave.filter((m) => EXCLUSIVE_PRESENTATION_MISBEHAVIOURS.includes(m))
    const others = misbehave.filter((m) => m !== 'expired-session' && !exclusive.includes(m))
    if (exclusive.length === 1 && others.length > 0) {
      throw new WalletUsageError(
        `misbehaviour ${exclusive[0]} replaces the whole answer: combine it with expired-session only, not with ${others.join(', ')}`,
      )
    }
    // the mode the answer is posted with; 'plain-response' is refused here unless direct_post.jwt was asked
    const responseMode = tamper.apply('response.mode', this.responseMode)
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

    let selection: DcqlSelection
    try {
      selection = await this.select()
    } catch (error) {
      if (error instanceof DcqlUnsatisfiedError && this.wallet.trustEverything) {
        selection = this.carelessSelection(error)
      } else if (error instanceof DcqlUnsatisfiedError && opts.onUnsatisfied === 'access-denied') {
        step('select', { unsatisfied: error.credentialQueries })
        return this.decline(
          opts.errorDescription ??
            `the wallet holds no credential for the credential quer${error.credentialQueries.length === 1 ? 'y' : 'ies'} ${error.credentialQueries.join(', ')}`,
          step,
        )
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
    let vpToken: VpTokenV1 = {}
    for (const answer of selection.answers) {
      const presentations: VpTokenV1[string] = []
      for (const choice of answer.credentials) {
        presentations.push(await this.present(choice, aimedAt.get(choice) ?? [], opts.ldProofType))
      }
      vpToken[answer.queryId] = presentations
    }
    vpToken = tamper.apply('vp_token', vpToken)

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
    const presented = choices.map((c) => c.credential.id)
    return {
      ...presentationResult(this, '1.0', 'verified', answer, form, presented),
      vpToken: JSON.stringify(vpToken),
      dcqlVpToken: vpToken,
      responseMode,
      ...(encryption && { encryption }),
    }
  }

  /**
   * The careless wallet (trustEverything) when nothing matches: the first held credential anyway, under every
   * credential query id, disclosing no selectively disclosable claim.
   */
  private carelessSelection(unsatisfied: DcqlUnsatisfiedError): DcqlSelection {
    const first = this.wallet.credentials()[0]
    if (!first) throw unsatisfied
    const format = first.format as DcqlChoice['format']
    return {
      answers: this.queryIds.map((queryId) => ({
        queryId,
        credentials: [{ queryId, format, credential: first, claimPaths: [], claimSetIndex: undefined }],
      })),
    }
  }

  /** One presentation of a chosen credential, with the misbehaviours aimed at it (its format's presenter). */
  private async present(
    choice: DcqlChoice,
    misbehave: readonly PresentationMisbehaviour[],
    ldProofType: string | undefined,
  ): Promise<string | Record<string, unknown>> {
    // B.2.6.1: the thumbprint of the key the request asks the answer to be encrypted to (the verifier's, as
    // its session knows it: 'plain-response' and 'jwe-wrong-key' change the encryption, not the handover)
    const encryptionKey = this.request.encryption?.jwk
    return PRESENTERS[choice.format].present({
      choice,
      misbehave,
      nonce: this.nonce,
      audience: this.clientId,
      iat: Math.floor(this.now() / 1000),
      responseUri: this.responseUri,
      jwkThumbprint:
        this.responseMode === 'direct_post.jwt' && encryptionKey
          ? jwkThumbprint(encryptionKey as never)
          : undefined,
      wallet: this.wallet,
      ldp: { forced: ldProofType, accepted: dcqlAcceptedLdProofs(this.request.payload.client_metadata) },
    })
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
