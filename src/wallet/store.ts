// Wallet state: the holder key and the received credentials. In memory by default; in a JSON file when the
// user asks for one (the CLI's --wallet FILE), so state survives between runs.
//
// Private key material: an in-memory wallet keeps its key only inside the Veramo in-memory KMS and never
// writes it anywhere. A file wallet stores the holder's private key (hex) in that file, unencrypted, with
// mode 0600: treat the file as a secret, and use it for test identities only. The further keys of a batch
// (holder-keys.ts) are kept the same way: in the Wallet's memory, and in the file of a file wallet.

import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import type { FormatId } from '../formats/registry.ts'
import { isObject } from '../shared/json.ts'

export type HolderKeyType = 'Ed25519' | 'P-256' | 'secp256k1'
export const HOLDER_KEY_TYPES: readonly HolderKeyType[] = ['Ed25519', 'P-256', 'secp256k1']

/** What the wallet receives and keeps: a credential format of the registry (src/formats/registry.ts). */
export type StoredFormat = FormatId

export interface StoredHolder {
  keyType: HolderKeyType
  did: string
  kid: string
  /** Veramo kms-local private key hex; present only in a file wallet */
  privateKeyHex?: string
}

export interface StoredCredential {
  /** `jti` of the credential, else `urn:sha256:<hash of the JWT>` */
  id: string
  format: StoredFormat
  /**
   * the credential as issued (jwt_vc_json: compact JWT; dc+sd-jwt: `<jwt>~<disclosure>~…~`; ldp_vc: its JSON
   * text; mso_mdoc: base64url IssuerSigned)
   */
  credential: string
  /** issuer (`iss`; mso_mdoc: the document signer certificate's subject) */
  issuer: string
  /**
   * holder DID (`sub`; for dc+sd-jwt the holder whose key is `cnf.jwk`; for mso_mdoc the MSO's deviceKey): the
   * wallet's own did, or a further key of a batch (WalletState.keys), whose key then presents it
   */
  subject: string
  /** jwt_vc_json: the VC types; dc+sd-jwt: [vct]; mso_mdoc: [doctype] */
  types: string[]
  /**
   * jwt_vc_json: credentialSubject; dc+sd-jwt: every disclosed claim but the registered ones; mso_mdoc: every
   * element by namespace (`{"org.iso.18013.5.1": {"family_name": …}}`)
   */
  credentialSubject: Record<string, unknown>
  /** dc+sd-jwt: the credential type */
  vct?: string
  /** mso_mdoc: the document type (ISO 18013-5 docType, `org.iso.18013.5.1.mDL`) */
  doctype?: string
  issuedAt?: string
  expiresAt?: string
  /** the OpenID4VCI credential issuer it came from */
  credentialIssuer: string
  configurationId: string
  receivedAt: string
}

export interface WalletState {
  version: 1
  holder?: StoredHolder
  /**
   * The further holder keys of batches (OpenID4VCI 1.0 §3.3.2): each bound to a stored credential whose
   * `subject` is its did; `privateKeyHex` (kms-local hex, as the holder's) in a file wallet only
   */
  keys?: StoredHolder[]
  credentials: StoredCredential[]
  /**
   * The nonces of the last authorization requests this wallet answered with a vp_token, oldest first
   * (bounded): a request reusing one is refused (OpenID4VP 1.0 §14.1), across runs of a file wallet.
   */
  answeredNonces?: string[]
}

export interface WalletStore {
  /** true when state (and the private key) are written somewhere */
  readonly persistent: boolean
  /** the file path, for messages */
  readonly location: string
  load(): Promise<WalletState | undefined>
  save(state: WalletState): Promise<void>
}

export function emptyState(): WalletState {
  return { version: 1, credentials: [] }
}

export class MemoryWalletStore implements WalletStore {
  readonly persistent = false
  readonly location = '(memory)'
  private state: WalletState | undefined
  async load(): Promise<WalletState | undefined> {
    return this.state === undefined ? undefined : structuredClone(this.state)
  }
  async save(state: WalletState): Promise<void> {
    this.state = structuredClone(state)
  }
}

export class WalletFileError extends Error {
  override name = 'WalletFileError'
}

/** Checks the shape of what was read, so a hand-edited or foreign file fails with a clear message. */
export function validateState(value: unknown, location: string): WalletState {
  const fail = (what: string): never => {
    throw new WalletFileError(`${location}: not a vc-harness wallet file (${what})`)
  }
  if (!isObject(value)) return fail('not a JSON object')
  if (value.version !== 1) return fail(`unsupported version ${JSON.stringify(value.version)}`)
  if (!Array.isArray(value.credentials)) return fail('credentials is not an array')
  for (const [i, c] of value.credentials.entries()) {
    if (!isObject(c) || typeof c.credential !== 'string' || typeof c.id !== 'string') {
      fail(`credentials[${i}] is not a stored credential`)
    }
  }
  const nonces = value.answeredNonces
  if (nonces !== undefined && (!Array.isArray(nonces) || nonces.some((n) => typeof n !== 'string'))) {
    fail('answeredNonces is not an array of strings')
  }
  const keys = value.keys
  if (keys !== undefined && !Array.isArray(keys)) fail('keys is not an array')
  const holders: [string, unknown][] = [
    ...(value.holder !== undefined ? [['holder', value.holder] as [string, unknown]] : []),
    ...((keys as unknown[] | undefined) ?? []).map((k, i): [string, unknown] => [`keys[${i}]`, k]),
  ]
  for (const [name, holder] of holders) {
    if (!isObject(holder)) return fail(`${name} is not an object`)
    if (!HOLDER_KEY_TYPES.includes(holder.keyType as HolderKeyType)) return fail(`${name}.keyType is unknown`)
    if (typeof holder.did !== 'string' || !holder.did.startsWith('did:key:')) return fail(`${name}.did`)
    if (typeof holder.kid !== 'string' || !holder.kid.startsWith(`${holder.did}#`)) return fail(`${name}.kid`)
    if (holder.privateKeyHex !== undefined && !/^[0-9a-f]+$/i.test(String(holder.privateKeyHex))) {
      return fail(`${name}.privateKeyHex is not hex`)
    }
  }
  return value as unknown as WalletState
}

/**
 * A JSON file, replaced atomically on every save: the new content goes to a temporary file in the same
 * folder (mode 0600), is fsynced, then renamed over the old one, so a crash leaves either the old or the new
 * state, never half of one. Saves of one store are serialised; two processes on one file: last save wins.
 */
export class FileWalletStore implements WalletStore {
  readonly persistent = true
  readonly location: string
  private queue: Promise<void> = Promise.resolve()

  constructor(path: string) {
    this.location = resolve(path)
  }

  async load(): Promise<WalletState | undefined> {
    let text: string
    try {
      text = await readFile(this.location, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw error
    }
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      throw new WalletFileError(`${this.location}: not JSON`)
    }
    return validateState(value, this.location)
  }

  save(state: WalletState): Promise<void> {
    const text = `${JSON.stringify(state, null, 2)}\n`
    const run = this.queue.then(() => this.write(text))
    this.queue = run.catch(() => {})
    return run
  }

  private async write(text: string): Promise<void> {
    const dir = dirname(this.location)
    await mkdir(dir, { recursive: true })
    const temp = join(dir, `.${basename(this.location)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`)
    try {
      const handle = await open(temp, 'wx', 0o600)
      try {
        await handle.writeFile(text, 'utf8')
        await handle.sync()
      } finally {
        await handle.close()
      }
      await rename(temp, this.location)
    } catch (error) {
      await rm(temp, { force: true })
      throw error
    }
    // make the rename itself durable (best effort: not every platform can fsync a directory)
    try {
      const dirHandle = await open(dir, 'r')
      try {
        await dirHandle.sync()
      } finally {
        await dirHandle.close()
      }
    } catch {}
  }
}
