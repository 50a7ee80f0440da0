// Receiving an ISO mdoc (format `mso_mdoc`, OpenID4VCI 1.0 Appendix A.2): the credential is a base64url
// IssuerSigned (A.2.4), read and verified with the code the service's verifier uses (src/shared/mdoc.ts through
// src/formats/mso-mdoc: issuerAuth's x5chain to an IACA trust anchor, its COSE_Sign1 signature, every
// IssuerSignedItem's digest); this module checks what only the holder knows (that the MSO's deviceKey is its own
// key), the validity period and the doctype the issuer's metadata names, and words each refusal with its rule.
import { createHash, createPublicKey, type KeyObject } from 'node:crypto'
import { formatOf } from '../formats/registry.ts'
import type { ReadCredential } from '../formats/types.ts'
import { didKeyFromPublicKey, resolveDidKey } from '../shared/did-key.ts'
import { MDOC_FORMAT, type MdocNamespaces, type MdocStatus } from '../shared/mdoc.ts'

/** A received mdoc, as the store keeps it. */
export interface ReceivedMdoc {
  /** `urn:sha256:<hex>` of the encoded IssuerSigned (an mdoc carries no identifier of its own) */
  id: string
  /** the document signer certificate's subject (issuerAuth x5chain leaf); '' when not verified */
  issuer: string
  docType: string
  /** every element, by namespace, values as JSON */
  namespaces: MdocNamespaces
  validFrom: string
  validUntil: string
  status: MdocStatus | undefined
  /** the document signer's key (its status list must be signed by the same key); undefined when not verified */
  issuerKey: KeyObject | undefined
  /** the did:key of the MSO's deviceKey (the holder key it is bound to), when it is one a did:key carries */
  deviceKeyDid: string | undefined
}

/** A refusal with the wallet-side code the verify step reports. */
export class MdocReceiveError extends Error {
  override name = 'MdocReceiveError'
  constructor(
    readonly code: 'invalid_credential' | 'wrong_holder_key',
    message: string,
  ) {
    super(message)
  }
}

/** A validFrom up to this far in the future is accepted (the issuer's and the wallet's clocks differ). */
export const MDOC_CLOCK_SKEW_MS = 60_000

/** The format's reader (src/formats/mso-mdoc), the one the service's verifier reads a DeviceResponse's documents with. */
const mdocs = () => formatOf(MDOC_FORMAT).credential

async function read(encoded: unknown): Promise<ReadCredential> {
  await mdocs().prepare?.()
  try {
    return mdocs().read(encoded, { algorithms: [] })
  } catch (error) {
    throw new MdocReceiveError(
      'invalid_credential',
      `the credential of an mso_mdoc configuration is base64url IssuerSigned (OpenID4VCI 1.0 Appendix A.2.4, ISO 18013-5 §8.3.2.1.2.2): the mdoc ${(error as Error).message}`,
    )
  }
}

const boundOf = (doc: ReadCredential, kind: 'notBefore' | 'notAfter') =>
  doc.validity.find((b) => b.kind === kind) as { at: number; shown: string }

function received(encoded: string, doc: ReadCredential, issuer: string, issuerKey?: KeyObject): ReceivedMdoc {
  const status = doc.status.find((s) => s.kind === 'token-status-list')
  return {
    id: `urn:sha256:${createHash('sha256').update(encoded).digest('hex')}`,
    issuer,
    docType: doc.types.at(-1) ?? '',
    namespaces: doc.claims as MdocNamespaces,
    validFrom: boundOf(doc, 'notBefore').shown,
    validUntil: boundOf(doc, 'notAfter').shown,
    status: status?.kind === 'token-status-list' ? { idx: status.index, uri: status.uri } : undefined,
    issuerKey,
    deviceKeyDid: doc.holderBinding.kind === 'key' ? didOf(doc.holderBinding.jwk) : undefined,
  }
}

/** The did:key of a JWK (undefined when it names no key a did:key can carry). */
function didOf(jwk: JsonWebKey): string | undefined {
  try {
    return didKeyFromPublicKey(createPublicKey({ key: jwk as never, format: 'jwk' })).did
  } catch {
    return undefined
  }
}

/**
 * Verifies an issued mdoc for this holder: validity period (ISO 18013-5 §9.1.2.4 ValidityInfo: validFrom ≤ now ≤
 * validUntil, validFrom with MDOC_CLOCK_SKEW_MS of skew), issuerAuth (§9.3.1: the x5chain to one of
 * `trustAnchors`, the IACA roots; the COSE_Sign1 signature by the document signer; every item's digest),
 * the MSO's docType = `docType` (the configuration's, when its metadata names one) and the MSO's deviceKey =
 * the holder key (`holderDid`, the key its proof showed; for a batch one of its keys, OpenID4VCI 1.0 §3.3.2).
 */
export async function verifyReceivedMdoc(
  encoded: unknown,
  expected: {
    holderDid: string | readonly string[]
    docType?: string | undefined
    trustAnchors: readonly string[]
    now?: number
  },
): Promise<ReceivedMdoc> {
  const now = expected.now ?? Date.now()
  const doc = await read(encoded)
  const validFrom = boundOf(doc, 'notBefore')
  const validUntil = boundOf(doc, 'notAfter')
  if (validUntil.at <= now) {
    throw new MdocReceiveError(
      'invalid_credential',
      `validity period: the MSO's validUntil ${validUntil.shown} has passed (ISO 18013-5 §9.1.2.4 ValidityInfo); an expired credential is not stored`,
    )
  }
  if (validFrom.at > now + MDOC_CLOCK_SKEW_MS) {
    throw new MdocReceiveError(
      'invalid_credential',
      `validity period: the MSO's validFrom ${validFrom.shown} is in the future (ISO 18013-5 §9.1.2.4 ValidityInfo)`,
    )
  }
  const auth = await doc.verifyProof(resolveDidKey, { trustAnchors: expected.trustAnchors, now })
  if (!auth.ok) {
    throw new MdocReceiveError(
      'invalid_credential',
      expected.trustAnchors.length === 0
        ? 'issuerAuth (ISO 18013-5 §9.1.2.4, §9.3.1) names its document signer by an x5chain, but this wallet has no IACA trust anchor configured (Wallet.create trustAnchors, --trust-anchor: the issuer IACA root, e.g. GET /oid4vci/<tenant>/iaca)'
        : `issuerAuth (ISO 18013-5 §9.1.2.4, §9.3.1) does not verify: ${auth.reason}`,
    )
  }
  const docType = doc.types.at(-1)
  if (expected.docType !== undefined && docType !== expected.docType) {
    throw new MdocReceiveError(
      'invalid_credential',
      `docType: the MSO's docType ${String(docType)} is not the offered configuration's doctype ${expected.docType} (OpenID4VCI 1.0 Appendix A.2.2; ISO 18013-5 §9.1.2.4)`,
    )
  }
  const binding = doc.holderBinding
  const holders = typeof expected.holderDid === 'string' ? [expected.holderDid] : expected.holderDid
  const bound = binding.kind === 'key' ? didOf(binding.jwk) : undefined
  if (bound === undefined || !holders.includes(bound)) {
    throw new MdocReceiveError(
      'wrong_holder_key',
      "holder binding: the MSO's deviceKeyInfo.deviceKey (ISO 18013-5 §9.1.2.4) is not this holder's key (the key its proof showed); the mdoc is bound to someone else",
    )
  }
  return received(encoded as string, doc, auth.issuer, auth.issuerKey)
}

/**
 * An mdoc read without verifying anything (the careless wallet of WalletOptions.trustEverything): its doctype
 * and elements, whoever signed it and whoever it is bound to.
 */
export async function parseReceivedMdoc(encoded: unknown): Promise<ReceivedMdoc> {
  return received(encoded as string, await read(encoded), '')
}
