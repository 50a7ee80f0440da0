import { createPrivateKey, createPublicKey } from 'node:crypto'
import type { AttestationSigner, WalletProviderTrust } from './client-attestation.ts'

// The built-in TEST wallet provider: a key pair published here on purpose, so that the simulated wallet (in
// any process, from the CLI too) can attest itself and a service configured to trust it (config
// `walletProviders: ["test"]`, on in the demo) accepts it. Anyone can sign with this key: a deployment that
// trusts it authenticates no wallet at all. Never trust it outside tests; configure real providers' keys.
const TEST_PROVIDER_JWK = {
  kty: 'EC',
  crv: 'P-256',
  x: 'imX1rnhRnrK-OJnhY6o3vhEb_VGeuPJ2LLic0vWCB6Y',
  y: 'AIHXLBdF0GeobY1kw4WoJ3EG6QU5fo0cC4zrt_M1Xxo',
  d: 'ZQ7gMuHJmwN0ZjVgdGgG1qiQ0_7iS8zq5CoPcTOf6e8',
  kid: 'vc-harness-test-wallet-provider',
}

export const TEST_WALLET_PROVIDER = 'test'
export const TEST_WALLET_PROVIDER_ISSUER = 'https://wallet-provider.vc-harness.invalid'

const { d: _private, ...publicJwk } = TEST_PROVIDER_JWK

/** What a service trusts when it trusts the test provider. */
export const testWalletProviderTrust: WalletProviderTrust = {
  name: TEST_WALLET_PROVIDER,
  jwks: [publicJwk],
  issuer: TEST_WALLET_PROVIDER_ISSUER,
}

/** What the simulated wallet signs its attestations with. */
export function testWalletProviderSigner(): AttestationSigner {
  return {
    privateKey: createPrivateKey({ key: TEST_PROVIDER_JWK, format: 'jwk' }),
    alg: 'ES256',
    issuer: TEST_WALLET_PROVIDER_ISSUER,
    kid: TEST_PROVIDER_JWK.kid,
  }
}

export const testWalletProviderPublicKey = () => createPublicKey({ key: publicJwk, format: 'jwk' })
