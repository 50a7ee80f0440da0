import { randomBytes } from 'node:crypto'
import {
  chmodSync,
  closeSync,
  linkSync,
  mkdirSync,
  openSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs'

// Files that hold secrets (the database, its -wal and -shm files, a data key): owner-only whatever the
// umask. The mode given to mkdir/open is masked by the umask, so each new file or folder is chmod-ed after
// it is created; an existing one is left as it is (serve refuses an exposed one unless told otherwise).

export const PRIVATE_DIR_MODE = 0o700
export const PRIVATE_FILE_MODE = 0o600

/** Permission bits that let group or others in: none of them may be set on a private file or folder. */
export const sharedBits = (mode: number) => mode & 0o077

/** `0755`-style text of a mode's permission bits, for messages. */
export const modeText = (mode: number) => `0${(mode & 0o777).toString(8).padStart(3, '0')}`

const errno = (error: unknown) => (error as NodeJS.ErrnoException).code

/** Creates `dir` (and missing parents) when missing, the folder itself 0700. True when it was created. */
export function ensurePrivateDir(dir: string): boolean {
  try {
    if (statSync(dir).isDirectory()) return false
  } catch (error) {
    if (errno(error) !== 'ENOENT') throw error
  }
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE })
  chmodSync(dir, PRIVATE_DIR_MODE)
  return true
}

/**
 * Creates `path` 0600 holding `content` unless it exists. True when this call created it. Of two processes
 * racing, one creates it and the other sees it complete: the content is written to a temporary file first
 * and linked into place (link fails when the name exists); a file system without hard links gets an
 * exclusive create instead.
 */
export function createPrivateFile(path: string, content = ''): boolean {
  if (content !== '') {
    const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
    writeFileSync(temporary, content, { mode: PRIVATE_FILE_MODE, flag: 'wx' })
    try {
      chmodSync(temporary, PRIVATE_FILE_MODE)
      linkSync(temporary, path)
      return true
    } catch (error) {
      if (errno(error) === 'EEXIST') return false
      if (errno(error) !== 'EPERM' && errno(error) !== 'ENOTSUP') throw error
    } finally {
      unlinkSync(temporary)
    }
  }
  let fd: number
  try {
    fd = openSync(path, 'wx', PRIVATE_FILE_MODE)
  } catch (error) {
    if (errno(error) === 'EEXIST') return false
    throw error
  }
  try {
    chmodSync(path, PRIVATE_FILE_MODE)
    if (content !== '') writeSync(fd, content)
  } finally {
    closeSync(fd)
  }
  return true
}

/** The mode and owner of `path`, or undefined when it does not exist. */
export function fileStatus(path: string): { mode: number; uid: number; isDirectory: boolean } | undefined {
  try {
    const s = statSync(path)
    return { mode: s.mode & 0o777, uid: s.uid, isDirectory: s.isDirectory() }
  } catch (error) {
    if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return undefined
    throw error
  }
}

/** chmod 0600 when the file exists and lets group or others in. */
export function tightenIfExists(path: string): void {
  const status = fileStatus(path)
  if (status && sharedBits(status.mode) !== 0) chmodSync(path, PRIVATE_FILE_MODE)
}
