import type { ServiceEvents } from '../events.ts'
import type { DcApiRequests } from '../oid4vp/dc-api.ts'
import type { Oid4vpProfile, RequestObjectSigner } from '../oid4vp/profile.ts'
import type { RequestObjectClaims, SessionRecord } from '../store/index.ts'
import type { BuiltRequest, RequestInput, SessionAsk } from '../verification/service.ts'
import { dcApiClaimsFault, FaultyDcApiRequests } from './dc-api.ts'
import { type FaultRegistry, isPresentationFault, type PresentationFault } from './index.ts'
import {
  foreignResponseUri,
  otherFormat,
  peDefinitionFault,
  presentationFault,
  type RequestKind,
  requestObjectFault,
  UNKNOWN_PREFIX,
  unknownPrefixClientId,
  unsatisfiableDcqlQuery,
} from './requests.ts'

// The wallet test plans' faulty verifier: decorators around the genuine OpenID4VP profile objects
// (oid4vp/request.ts, oid4vp/request-v1.ts) and the request object signer they sign with, wired by app.ts
// only in an app built with `faults`. Each tenant's FlowSetting picks the one rule its requests break
// (faults/requests.ts says how each fault breaks it); the requests of every other tenant pass through.
//
// What the verifier asks is changed where it is decided: the nonce and the dcql format before the query is
// built (prepare), the query and the client identifier prefix before the request is (build), and the claims
// the session keeps after it (askedClaims). The request object is signed inside the genuine builder, so the
// faulty signer signs the same askedClaims, then applies the fault in how the request is presented.

/** The client identifier prefix of a client_id (`did` for the pe profile's bare DID). */
const prefixOf = (clientId: string) => clientId.slice(0, clientId.indexOf(':')) as RequestKind['prefix']
const DID_PREFIX = 'decentralized_identifier'

export class FaultyVerifier {
  /** Sessions verified, by id, with their nonce: recorded as answered once the outcome is committed. */
  private readonly verified = new Map<string, string>()

  constructor(
    private readonly registry: FaultRegistry,
    private readonly deps: {
      /** The service's public base URL (what a response_uri on the foreign origin replaces). */
      publicBase: () => string
      /** The committed outcomes: a verified one's nonce becomes the registry's lastAnsweredNonce. */
      events: ServiceEvents
    },
  ) {
    deps.events.on((event) => {
      if (event.kind !== 'verification' || (event.step !== 'verified' && event.step !== 'rejected')) return
      const nonce = this.verified.get(event.sessionId)
      this.verified.delete(event.sessionId)
      // A wallet answered this nonce: the nonce-reused fault of a later session offers it again.
      if (nonce !== undefined && event.step === 'verified') registry.lastAnsweredNonce = nonce
    })
  }

  /** The tenant's presentation fault, if it has one. */
  private fault(tenantId: string): PresentationFault | undefined {
    const fault = this.registry.fault(tenantId)
    return fault && isPresentationFault(fault) ? fault : undefined
  }

  /**
   * The claims a session keeps and its request object signs, under a fault in what the verifier asks.
   * Idempotent: re-signing a session's stored claims (request_uri_method=post) changes nothing more.
   */
  private askedClaims<C extends Record<string, unknown>>(fault: PresentationFault, claims: C): C {
    switch (fault) {
      case 'unknown-client-id-prefix':
        return { ...claims, client_id: unknownPrefixClientId(String(claims.client_id)) }
      case 'response-uri-foreign-origin': {
        const prefix = prefixOf(String(claims.client_id))
        const base = this.deps.publicBase()
        return {
          ...claims,
          response_uri: foreignResponseUri(this.registry, base, String(claims.response_uri), prefix),
        }
      }
      case 'query-unsatisfiable':
      case 'format-not-offered': {
        const definition = claims.presentation_definition
        return definition
          ? {
              ...claims,
              presentation_definition: peDefinitionFault(fault, definition as Record<string, unknown>),
            }
          : claims
      }
      default:
        return claims
    }
  }

  /** A request object signer that signs what the tenant's fault makes of the claims, and how. */
  signer(inner: RequestObjectSigner): RequestObjectSigner {
    return {
      sign: (tenantId, claims, key, now) => {
        const fault = this.fault(tenantId)
        if (!fault) return inner.sign(tenantId, claims, key, now)
        const shown = requestObjectFault(
          fault,
          dcApiClaimsFault(fault, this.askedClaims(fault, claims)),
          key,
          now,
        )
        return inner.sign(tenantId, shown.claims, { ...key, privateKey: shown.privateKey }, now)
      },
    }
  }

  /** The requests over the Digital Credentials API under the tenant's fault (faults/dc-api.ts). */
  dcApi(inner: DcApiRequests): DcApiRequests {
    return new FaultyDcApiRequests(this.registry, inner)
  }

  /** The profile object `inner` (of profile `id`) asking what its tenant's fault makes it ask. */
  profile<T>(id: SessionRecord['profile'], inner: Oid4vpProfile<T>): Oid4vpProfile<T> {
    const requestObjectFor = inner.requestObjectFor?.bind(inner)
    return {
      submissionFormat: inner.submissionFormat,
      parseResponse: (params) => inner.parseResponse(params),
      verify: async (response, session, context) => {
        const verdict = await inner.verify(response, session, context)
        if (verdict.validations.status === 'SUCCESS') this.verified.set(session.id, session.request.nonce)
        return verdict
      },
      prepare: (genuine) => this.prepare(id, inner.prepare?.(genuine) ?? genuine),
      build: (input) => this.build(inner, input),
      ...(requestObjectFor && {
        requestObjectFor: (session: SessionRecord, walletNonce: string | undefined) => {
          // unknown-client-id-prefix: re-signed as the decentralized_identifier it was built as (the signer
          // renames it again).
          const clientId = session.request.client_id
          const asBuilt = clientId.startsWith(`${UNKNOWN_PREFIX}:`)
            ? {
                ...session,
                request: {
                  ...session.request,
                  client_id: `${DID_PREFIX}${clientId.slice(UNKNOWN_PREFIX.length)}`,
                },
              }
            : session
          return requestObjectFor(asBuilt, walletNonce)
        },
      }),
    }
  }

  /**
   * What a new session asks under its tenant's fault; a 409 naming the mistake when the fault cannot apply
   * to the template (presentationFault).
   */
  private prepare(profile: SessionRecord['profile'], ask: SessionAsk): SessionAsk {
    const fault = presentationFault(this.registry, ask.tenantId, {
      profile,
      ...(ask.settings && { prefix: ask.settings.clientIdPrefix }),
    })
    // nonce-reused (OpenID4VP 1.0 §14.1: a fresh nonce per request): the session expects the reused one too,
    // so a wallet that answers anyway is VERIFIED (presentationFault made sure there is one).
    if (fault === 'nonce-reused') return { ...ask, nonce: this.registry.lastAnsweredNonce as string }
    // format-not-offered: the query (and vp_formats_supported) name the other format.
    if (fault === 'format-not-offered' && ask.settings) {
      return { ...ask, settings: { ...ask.settings, format: otherFormat(ask.settings.format) } }
    }
    return ask
  }

  private async build<T>(inner: Oid4vpProfile<T>, input: RequestInput): Promise<BuiltRequest> {
    const fault = this.fault(input.tenantId)
    if (!fault) return inner.build(input)
    const { dcqlQuery, settings } = input
    const built = await inner.build({
      ...input,
      // query-unsatisfiable (OpenID4VP 1.0 §6.4.2): every credential query names what nobody holds.
      ...(fault === 'query-unsatisfiable' && dcqlQuery && { dcqlQuery: unsatisfiable(dcqlQuery) }),
      // unknown-client-id-prefix: signed like decentralized_identifier, whatever the template's prefix.
      ...(fault === 'unknown-client-id-prefix' &&
        settings && { settings: { ...settings, clientIdPrefix: DID_PREFIX } }),
    })
    const request: RequestObjectClaims = this.askedClaims(fault, built.request)
    return { ...built, request, link: faultyLink(fault, built.link, request) }
  }
}

type DcqlQuery = Parameters<typeof unsatisfiableDcqlQuery>[0]
const unsatisfiable = (query: Record<string, unknown>) =>
  unsatisfiableDcqlQuery(query as unknown as DcqlQuery) as unknown as Record<string, unknown>

/**
 * The deep link under a fault: it names the client_id the request does, a redirect_uri request's
 * response_uri, and (nonce-missing, OpenID4VP 1.0 §5.2) no nonce; the session keeps one to check.
 */
function faultyLink(fault: PresentationFault, link: string, request: RequestObjectClaims): string {
  const at = link.indexOf('?')
  const params = new URLSearchParams(link.slice(at + 1))
  if (fault === 'unknown-client-id-prefix') params.set('client_id', request.client_id)
  else if (fault === 'response-uri-foreign-origin' && params.has('response_uri')) {
    params.set('response_uri', request.response_uri)
  } else if (fault === 'nonce-missing') params.delete('nonce')
  else return link
  // As the builders write it: URLSearchParams' '+' for a space as %20.
  return `${link.slice(0, at + 1)}${params.toString().replaceAll('+', '%20')}`
}
