// Minimal declarations for the untyped Digital Bazaar Data Integrity modules, covering what
// src/shared/data-integrity.ts uses.

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
