import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createPrivateFile, ensurePrivateDir, fileStatus, modeText, sharedBits } from './private-files.ts'

// Private keys and webhook secrets are encrypted at rest (docs/security.md, "Data at rest") with a data key
// kept outside the database: whoever copies the database (a backup, a stray 0644 file) gets ciphertext.
// AES-256-GCM; each value names the key that sealed it, so several keys can be given during a rotation
// (the first seals, all open) and the store re-seals everything under the first one at start-up.

export const DATA_KEY_ENV = 'VC_HARNESS_DATA_KEY'
export const DATA_KEY_FILE_ENV = 'VC_HARNESS_DATA_KEY_FILE'
/** Where the embedded demo and test-mode configurations keep the key they generate: in the data folder. */
export const LOCAL_DATA_KEY_FILE = 'data.key'
/** The one-line command the messages and docs give for making a key. */
export const MAKE_KEY_COMMAND = '(umask 077 && openssl rand -base64 32 > /etc/vc-harness/data.key)'

const ENVELOPE = 'enc:v1:'
const KEY_BYTES = 32
const IV_BYTES = 12
const TAG_BYTES = 16
/** Opened values remembered (by row and ciphertext): a session's response key is read several times a flow. */
const MEMO_SIZE = 512

/** A data key that is missing, malformed, exposed, or not the one a stored value was sealed with. */
export class DataKeyError extends Error {
  override name = 'DataKeyError'
}

interface Key {
  id: string
  /** The AES-256-GCM key, derived from the key given (HKDF), so the given bytes encrypt nothing directly. */
  aes: Buffer
}

function deriveKey(secret: Buffer): Key {
  const id = Buffer.from(hkdfSync('sha256', secret, '', 'vc-harness data key id', 6)).toString('base64url')
  const aes = Buffer.from(hkdfSync('sha256', secret, '', 'vc-harness data at rest: AES-256-GCM', KEY_BYTES))
  return { id, aes }
}

/**
 * The data keys in use: the first seals, every one opens. A sealed value is
 * `enc:v1:<key id>:<iv>:<ciphertext+tag>` (base64url), authenticated with its place (table, column, row) as
 * additional data, so a value copied into another row does not open.
 */
export class DataKeyring {
  private readonly keys: Key[]
  private readonly byId: Map<string, Key>
  private readonly memo = new Map<string, string>()
  /** Values the store re-sealed under the current key when it opened (what `serve` reports). */
  resealed = 0

  private constructor(
    private readonly secrets: Buffer[],
    /** Where the keys came from, for messages (never the key itself). */
    readonly origin: string,
  ) {
    this.keys = secrets.map(deriveKey)
    this.byId = new Map(this.keys.map((k) => [k.id, k]))
  }

  /** Keys as text: base64 or base64url, 32 bytes each, separated by commas or whitespace (newest first). */
  static parse(text: string, origin: string): DataKeyring {
    const entries = text.split(/[\s,]+/).filter((entry) => entry !== '')
    if (entries.length === 0) throw new DataKeyError(`${origin}: no key in it (expected base64 of 32 bytes)`)
    const secrets: Buffer[] = []
    entries.forEach((entry, i) => {
      const bytes = /^[A-Za-z0-9+/_-]+={0,2}$/.test(entry) ? Buffer.from(entry, 'base64') : undefined
      if (bytes?.length !== KEY_BYTES) {
        const which = entries.length > 1 ? `key ${i + 1} of ${entries.length}` : 'the key'
        throw new DataKeyError(
          `${origin}: ${which} is not base64 of ${KEY_BYTES} bytes${bytes ? ` (it decodes to ${bytes.length})` : ''}; make one with ${MAKE_KEY_COMMAND}`,
        )
      }
      if (!secrets.some((s) => s.equals(bytes))) secrets.push(bytes)
    })
    return new DataKeyring(secrets, origin)
  }

  /** A fresh random key: an in-memory database's, or the one the demo writes to `data.key`. */
  static generate(origin: string): DataKeyring {
    return new DataKeyring([randomBytes(KEY_BYTES)], origin)
  }

  /** The keys' ids, the sealing one first. */
  get ids(): string[] {
    return this.keys.map((k) => k.id)
  }

  get currentId(): string {
    return (this.keys[0] as Key).id
  }

  /** The keys as `parse` reads them: what a cluster primary hands its workers over IPC (never a file). */
  export(): string {
    return this.secrets.map((s) => s.toString('base64')).join(',')
  }

  /** Whether `stored` is sealed under the current key (the start-up step re-seals every other value). */
  isCurrent(stored: string): boolean {
    return stored.startsWith(`${ENVELOPE}${this.currentId}:`)
  }

  static isSealed(stored: string): boolean {
    return stored.startsWith(ENVELOPE)
  }

  seal(plaintext: string, place: string): string {
    const key = this.keys[0] as Key
    const iv = randomBytes(IV_BYTES)
    const cipher = createCipheriv('aes-256-gcm', key.aes, iv)
    cipher.setAAD(Buffer.from(place))
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()])
    return `${ENVELOPE}${key.id}:${iv.toString('base64url')}:${body.toString('base64url')}`
  }

  /** The plaintext of a value sealed for `place`; a DataKeyError naming the place and the key id otherwise. */
  open(stored: string, place: string): string {
    const memoKey = `${place}\n${stored}`
    const known = this.memo.get(memoKey)
    if (known !== undefined) return known
    if (!DataKeyring.isSealed(stored)) {
      // The start-up step seals every clear value, so one found later was written behind the service's back.
      throw new DataKeyError(`${place} is stored in clear, not encrypted: refused`)
    }
    const [id, iv, body] = stored.slice(ENVELOPE.length).split(':')
    const key = id === undefined ? undefined : this.byId.get(id)
    if (!key) {
      throw new DataKeyError(
        `${place} is encrypted under data key id "${id}", which is not among the keys given (${this.origin}: id ${this.ids.join(', ')}). Start with the key it was encrypted with; during a rotation give both, the new one first (docs/security.md)`,
      )
    }
    let plaintext: string
    try {
      const bytes = Buffer.from(body ?? '', 'base64url')
      const nonce = Buffer.from(iv ?? '', 'base64url')
      // The full tag, always: GCM would accept a truncated one (4 bytes and up), far easier to forge.
      if (nonce.length !== IV_BYTES || bytes.length < TAG_BYTES) throw new Error('malformed')
      const decipher = createDecipheriv('aes-256-gcm', key.aes, nonce, { authTagLength: TAG_BYTES })
      decipher.setAAD(Buffer.from(place))
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES))
      plaintext = Buffer.concat([
        decipher.update(bytes.subarray(0, bytes.length - TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8')
    } catch {
      throw new DataKeyError(
        `${place}: decryption under data key id "${id}" failed (the value was altered or copied from another row)`,
      )
    }
    if (this.memo.size >= MEMO_SIZE) this.memo.delete(this.memo.keys().next().value as string)
    this.memo.set(memoKey, plaintext)
    return plaintext
  }
}

/** Reads a key file; refused when group or others may read or write it (a key anyone can read protects nothing). */
export function readDataKeyFile(path: string, origin = path): DataKeyring {
  const status = fileStatus(path)
  if (!status) throw new DataKeyError(`${origin}: no such file`)
  if (status.isDirectory) throw new DataKeyError(`${origin}: is a folder, not a key file`)
  if (process.platform !== 'win32' && sharedBits(status.mode) !== 0) {
    throw new DataKeyError(
      `${origin}: the data key file is open to other users (mode ${modeText(status.mode)}): chmod 600 ${path} (a Kubernetes secret volume: defaultMode 0400)`,
    )
  }
  return DataKeyring.parse(readFileSync(path, 'utf8'), origin)
}

/**
 * The key of the embedded demo and of test-mode configurations: `<dataDir>/data.key`, generated (0600) on
 * first use. It sits beside the database, so it guards against a stray copy of the database file only:
 * production keeps its key elsewhere (resolveDataKeys).
 */
export function localDataKeys(dataDir: string): { keyring: DataKeyring; file: string; generated: boolean } {
  const file = join(dataDir, LOCAL_DATA_KEY_FILE)
  ensurePrivateDir(dataDir)
  const fresh = DataKeyring.generate(file)
  const generated = createPrivateFile(file, `${fresh.export()}\n`)
  return { keyring: generated ? fresh : readDataKeyFile(file), file, generated }
}

export interface DataKeySources {
  /** --data DIR, or ':memory:'. */
  dataDir: string
  /** `--data-key-file FILE`, else $VC_HARNESS_DATA_KEY_FILE (`keyFileOrigin` says which, for messages). */
  keyFile?: string | undefined
  keyFileOrigin?: string
  /** $VC_HARNESS_DATA_KEY: the keys themselves. */
  keyText?: string | undefined
  /** Production mode: the key must come from outside the data folder; a missing one is an error. */
  production: boolean
}

export interface ResolvedDataKeys {
  keyring: DataKeyring
  /** One line for the start-up banner: where the key came from (never the key). */
  description: string
  /** Set when this call wrote `<data>/data.key`: removed again if the service then does not start. */
  generatedFile?: string
}

/**
 * Chooses the data key of `vc-harness serve`: a key file or $VC_HARNESS_DATA_KEY when given (not both);
 * otherwise an in-memory key for an in-memory database, `<data>/data.key` (generated when missing) for the
 * demo and test-mode configurations, and a DataKeyError saying how to make one in production mode.
 */
export function resolveDataKeys(sources: DataKeySources): ResolvedDataKeys {
  const { dataDir, keyFile, keyText, production } = sources
  if (keyFile !== undefined && keyText !== undefined) {
    throw new DataKeyError(
      `both ${sources.keyFileOrigin ?? '--data-key-file'} and ${DATA_KEY_ENV} are set: give the data key one way`,
    )
  }
  const described = (keyring: DataKeyring, from: string) => {
    const others = keyring.ids.slice(1)
    const also = others.length > 0 ? `; also opens ${others.join(', ')} (rotation)` : ''
    return { keyring, description: `data key: ${from} (id ${keyring.currentId}${also})` }
  }
  if (keyFile !== undefined) {
    const origin = `${sources.keyFileOrigin ?? '--data-key-file'} ${keyFile}`
    return described(readDataKeyFile(keyFile, origin), keyFile)
  }
  if (keyText !== undefined) return described(DataKeyring.parse(keyText, DATA_KEY_ENV), DATA_KEY_ENV)
  if (dataDir === ':memory:') {
    return {
      keyring: DataKeyring.generate('an in-memory key'),
      description: 'data key: in memory, like the data',
    }
  }
  const local = join(dataDir, LOCAL_DATA_KEY_FILE)
  if (production) {
    const found = fileStatus(local)
      ? ` ${local} exists (written by the demo or a test-mode configuration), but a key beside the database protects nothing from whoever copies the folder: move it out and name it with --data-key-file.`
      : ''
    throw new DataKeyError(
      `no data key. With a configuration of your own (webhooks.mode "production") and a database on disk, private keys and webhook secrets are encrypted at rest with a key kept outside the database.${found} Make one:\n  ${MAKE_KEY_COMMAND}\nthen start with --data-key-file /etc/vc-harness/data.key (or ${DATA_KEY_FILE_ENV}=<file>, or the key itself in ${DATA_KEY_ENV}); keep it out of --data and back it up apart from the database (docs/security.md)`,
    )
  }
  const { keyring, file, generated } = localDataKeys(dataDir)
  if (!generated) return described(keyring, file)
  return {
    keyring,
    description: `data key: generated ${file} (mode 0600) for this demo/test configuration; production keeps its key outside --data (docs/security.md)`,
    generatedFile: file,
  }
}
