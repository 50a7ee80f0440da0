// Minimal declarations for the untyped Digital Bazaar Data Integrity modules, covering what
// src/shared/data-integrity.ts and src/formats/ldp-vc/ use.

declare module 'jsonld-signatures' {
  type DocumentLoader = (url: string) => Promise<{ document: unknown; documentUrl: string; contextUrl: null }>

  interface ProofPurposeInstance {
    readonly term: string
  }

  interface AuthenticationProofPurposeOptions {
    challenge: string
    domain?: string
    controller?: Record<string, unknown>
    date?: Date | string
    maxTimestampDelta?: number
  }

  interface VerifyResult {
    verified: boolean
    results?: Array<{ proof: Record<string, unknown>; verified: boolean; error?: Error }>
    error?: Error & { errors?: Error[] }
  }

  interface Jsigs {
    sign(
      document: Record<string, unknown>,
      options: { suite: unknown; purpose: ProofPurposeInstance; documentLoader: DocumentLoader },
    ): Promise<Record<string, unknown>>
    verify(
      document: Record<string, unknown>,
      options: { suite: unknown; purpose: ProofPurposeInstance; documentLoader: DocumentLoader },
    ): Promise<VerifyResult>
    purposes: {
      AuthenticationProofPurpose: new (options: AuthenticationProofPurposeOptions) => ProofPurposeInstance
      AssertionProofPurpose: new (options?: Record<string, unknown>) => ProofPurposeInstance
    }
  }

  const jsigs: Jsigs
  export default jsigs
}

declare module '@digitalbazaar/data-integrity' {
  export class DataIntegrityProof {
    constructor(options: {
      signer?: { id: string; algorithm: string; sign(input: { data: Uint8Array }): Promise<Uint8Array> }
      date?: Date | string | null
      cryptosuite: unknown
      legacyContext?: boolean
    })
    readonly type: string
    readonly cryptosuite: string
  }
}

declare module '@digitalbazaar/eddsa-rdfc-2022-cryptosuite' {
  export const cryptosuite: { name: string; requiredAlgorithm: string }
}

declare module '@digitalbazaar/ed25519-multikey' {
  interface Ed25519MultikeyPair {
    id?: string
    controller?: string
    publicKeyMultibase: string
    export(options?: {
      publicKey?: boolean
      secretKey?: boolean
      includeContext?: boolean
    }): Promise<Record<string, unknown>>
  }
  export function from(key: Record<string, unknown>): Promise<Ed25519MultikeyPair>
}

declare module '@digitalbazaar/credentials-context' {
  export const contexts: Map<string, unknown>
}

declare module '@digitalbazaar/data-integrity-context' {
  export const contexts: Map<string, unknown>
}

declare module '@digitalbazaar/multikey-context' {
  export const contexts: Map<string, unknown>
}

// --- Linked Data proofs (src/formats/ldp-vc/) ---

declare module '@digitalbazaar/ecdsa-rdfc-2019-cryptosuite' {
  export const cryptosuite: { name: string; requiredAlgorithm: string[] }
}

declare module '@digitalbazaar/jws-linked-data-signature' {
  /** The detached-JWS Linked Data signature suite (jsonld-signatures' LinkedDataSignature). */
  export class JwsLinkedDataSignature {
    constructor(options: {
      type: string
      alg?: string
      LDKeyClass?: unknown
      contextUrl?: string
      signer?: { id: string; algorithm: string; sign(input: { data: Uint8Array }): Promise<Uint8Array> }
      date?: Date | string
    })
    type: string
    alg: string | undefined
    verifier: unknown
    ensureSuiteContext(options: { document: Record<string, unknown>; addSuiteContext: boolean }): void
    canonize(input: Record<string, unknown>, options: { documentLoader: unknown }): Promise<string>
    canonizeProof(
      proof: Record<string, unknown>,
      options: { document: unknown; documentLoader: unknown },
    ): Promise<string>
    getVerificationMethod(options: {
      proof: Record<string, unknown>
      documentLoader: unknown
    }): Promise<unknown>
    verifySignature(options: {
      verifyData: Uint8Array
      verificationMethod: Record<string, unknown>
      proof: Record<string, unknown>
    }): Promise<boolean>
  }
}

declare module '@digitalbazaar/ed25519-signature-2018' {
  export class Ed25519Signature2018 {
    constructor(options: {
      signer?: { id: string; algorithm: string; sign(input: { data: Uint8Array }): Promise<Uint8Array> }
      date?: Date | string
    })
  }
}

declare module '@digitalbazaar/security-context' {
  export const contexts: Map<string, unknown>
}
declare module 'did-context' {
  export const contexts: Map<string, unknown>
}
declare module 'ed25519-signature-2018-context' {
  export const contexts: Map<string, unknown>
}
declare module 'ed25519-signature-2020-context' {
  const context: { contexts: Map<string, unknown> }
  export default context
}
declare module '@digitalbazaar/vc-bitstring-status-list-context' {
  export const contexts: Map<string, unknown>
}
