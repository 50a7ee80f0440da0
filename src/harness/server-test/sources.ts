// Where a server test's flows come from: a credential offer or an authorization request per case, and, for a
// verifier that reports its verdict elsewhere, that verdict. Either the user's commands (any issuer or
// verifier a script can drive: `--offer-command`, `--request-command`, `--complete-command`,
// `--result-command`), or a deployment of the relying-party API this project implements (relying-party.ts).

import { spawn } from 'node:child_process'
import { shellQuote } from '../wallet-test/drivers.ts'

/** One fresh credential offer, as a wallet would scan it. */
export interface Offer {
  /** the deep link (openid-credential-offer://…), or a link built around a bare credential_offer_uri */
  link: string
  /** the transaction code the issuer showed out of band, when the offer needs one */
  txCode?: string
  /** completes a deferred issuance (the issuer answered 202 with this transaction_id) */
  complete?: (transactionId: string) => Promise<void>
}

export interface OfferSource {
  /** how the reports name it */
  readonly describe: string
  /** `deferred`: an offer whose issuance waits for a completion (undefined: this source cannot make one) */
  next(kind: 'immediate' | 'deferred'): Promise<Offer | undefined>
}

/** One fresh authorization request. */
export interface AuthorizationRequest {
  link: string
  /** the verifier's verdict once the wallet answered, when it reports it elsewhere */
  result?: (answer: { state?: string | undefined; session: string }) => Promise<ReportedResult>
}

/** What a verifier reports of a presentation, besides its HTTP answer. */
export interface ReportedResult {
  /** true: accepted; false: rejected; undefined: not (yet) decided */
  accepted: boolean | undefined
  /** its words: the failed checks, the status it shows */
  detail: string
}

/**
 * One fresh request over the W3C Digital Credentials API (OpenID4VP 1.0 Appendix A), as the verifier's page
 * would make it: the entry it hands `navigator.credentials.get`, the page's origin, and where the page posts
 * the DigitalCredential back (JSON `{origin, protocol, data}`; 2xx accepted, 4xx refused).
 */
export interface DcApiAsk {
  request: { protocol: string; data: Record<string, unknown> }
  origin: string
  response: string
  /** the verifier's verdict once the answer was posted, when it reports it elsewhere */
  result?: () => Promise<ReportedResult>
}

export interface RequestSource {
  readonly describe: string
  /** the next authorization request by link; undefined: this source gives none (DC API only) */
  next(): Promise<AuthorizationRequest>
  /** whether next() gives links (a source of DC API requests alone does not) */
  readonly links?: boolean
  /**
   * The next request over the Digital Credentials API, or undefined when the verifier offers none; `fetch`
   * is the recording one (a source that must fetch the entry uses it)
   */
  nextDcApi?(fetch: typeof globalThis.fetch): Promise<DcApiAsk | undefined>
  /** closes what the source opened (keys it created on a deployment, …) */
  close?(): Promise<void>
}

/** A command that could not give what it must: the message names the command's problem, never secrets. */
export class SourceError extends Error {
  override name = 'SourceError'
}

const OUTPUT_MAX = 64 * 1024

/** Runs `command` through /bin/sh with the values substituted, shell-quoted; resolves with its stdout. */
export async function runCommand(
  command: string,
  values: Record<string, string> = {},
  opts: { timeoutMs?: number; what?: string } = {},
): Promise<string> {
  const line = command.replace(/(['"]?)\{([a-z_]+)\}\1/g, (whole, _q, name: string) =>
    name in values ? shellQuote(values[name] as string) : whole,
  )
  const what = opts.what ?? 'the command'
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', line], { stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout = (stdout + chunk.toString('utf8')).slice(0, OUTPUT_MAX)
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-4000)
    })
    const timer = setTimeout(() => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL')
      } catch {}
      reject(new SourceError(`${what} did not finish within ${(opts.timeoutMs ?? 30_000) / 1000} s`))
    }, opts.timeoutMs ?? 30_000)
    child.on('error', (error) => {
      clearTimeout(timer)
      reject(new SourceError(`${what} could not run: ${error.message}`))
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      if (code === 0) resolve(stdout)
      else
        reject(
          new SourceError(
            `${what} exited ${code}${stderr.trim() ? `: ${stderr.trim().split('\n').at(-1)}` : ''}`,
          ),
        )
    })
  })
}

/**
 * A credential offer in an offer command's output (docs/server-testing.md): the first line that is an offer
 * link (`openid-credential-offer://…`, or any URL with `credential_offer=` / `credential_offer_uri=`), or a
 * bare https/http URL (taken as a credential_offer_uri), or a JSON object with `credential_offer_uri` (the
 * relying-party API's 4.2 answer, printed as it is); `tx_code: VALUE` (or `tx_code=VALUE`, or the JSON's
 * `tx_code`) on its own line gives the transaction code.
 */
export function parseOfferOutput(output: string): { link: string; txCode?: string } {
  const text = output.trim()
  if (text.startsWith('{')) {
    try {
      const json = JSON.parse(text) as Record<string, unknown>
      const uri = json.credential_offer_uri
      if (typeof uri === 'string') {
        return {
          link: asOfferLink(uri),
          ...(typeof json.tx_code === 'string' ? { txCode: json.tx_code } : {}),
        }
      }
    } catch {}
  }
  let link: string | undefined
  let txCode: string | undefined
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    const tx = /^tx_code\s*[:=]\s*(\S+)$/i.exec(line)
    if (tx) {
      txCode ??= tx[1]
      continue
    }
    if (link === undefined && /^[a-z][a-z0-9+.-]*:\/\/\S+$/i.test(line)) {
      if (/[?&]credential_offer(_uri)?=/.test(line) || /^https?:/i.test(line)) link = asOfferLink(line)
    }
  }
  if (link === undefined) {
    throw new SourceError(
      `the offer command printed no credential offer link (an openid-credential-offer:// link, a URL with credential_offer_uri=, or a bare credential_offer_uri); it printed: ${JSON.stringify(text.slice(0, 200))}`,
    )
  }
  return { link, ...(txCode !== undefined ? { txCode } : {}) }
}

/** A bare https credential_offer_uri becomes the deep link that carries it. */
function asOfferLink(value: string): string {
  if (/[?&]credential_offer(_uri)?=/.test(value)) return value
  return `openid-credential-offer://?credential_offer_uri=${encodeURIComponent(value)}`
}

/**
 * An authorization request in a request command's output: the first line that is a URL carrying
 * `client_id=`, `request_uri=` or `request=` (any scheme: openid4vp://, haip://, https://…), or a JSON
 * object whose `authentication_request` / `authorization_request` / `request_link` member is one.
 */
export function parseRequestOutput(output: string): string {
  const text = output.trim()
  if (text.startsWith('{')) {
    try {
      const json = JSON.parse(text) as Record<string, unknown>
      for (const name of ['authentication_request', 'authorization_request', 'request_link', 'link']) {
        const value = json[name]
        if (typeof value === 'string' && isRequestLink(value)) return value
      }
    } catch {}
  }
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (isRequestLink(line)) return line
  }
  throw new SourceError(
    `the request command printed no authorization request link (a URL with client_id=, request_uri= or request=); it printed: ${JSON.stringify(text.slice(0, 200))}`,
  )
}

function isRequestLink(line: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\/?\S*[?&](client_id|request_uri|request)=/i.test(line)
}

/** An offer per case from `--offer-command` (and `--deferred-offer-command` with `--complete-command`). */
export function commandOffers(opts: {
  offerCommand: string
  deferredOfferCommand?: string
  completeCommand?: string
  txCode?: string
  timeoutMs?: number
}): OfferSource {
  const fetchOffer = async (command: string, what: string): Promise<Offer> => {
    const parsed = parseOfferOutput(
      await runCommand(command, {}, { what, timeoutMs: opts.timeoutMs ?? 30_000 }),
    )
    const txCode = parsed.txCode ?? opts.txCode
    return { link: parsed.link, ...(txCode !== undefined ? { txCode } : {}) }
  }
  return {
    describe: opts.offerCommand,
    async next(kind) {
      if (kind === 'immediate') return fetchOffer(opts.offerCommand, '--offer-command')
      if (!opts.deferredOfferCommand || !opts.completeCommand) return undefined
      const offer = await fetchOffer(opts.deferredOfferCommand, '--deferred-offer-command')
      const complete = opts.completeCommand
      return {
        ...offer,
        complete: async (transactionId) => {
          await runCommand(
            complete,
            { offer: offer.link, transaction_id: transactionId },
            { what: '--complete-command', timeoutMs: opts.timeoutMs ?? 30_000 },
          )
        },
      }
    },
  }
}

/**
 * `--result-command` output: JSON `{"accepted": true|false, "reason"?: "…"}` (also `status` VERIFIED /
 * REJECTED as 4.7 answers), else its exit code: 0 accepted, 1 rejected, any other undecided.
 */
export async function commandResult(
  command: string,
  values: { state?: string | undefined; session: string; link: string },
): Promise<ReportedResult> {
  let output: string
  try {
    output = await runCommand(
      command,
      { state: values.state ?? '', session: values.session, link: values.link },
      { what: '--result-command' },
    )
  } catch (error) {
    const exited = /exited (\d+)/.exec((error as Error).message)
    if (exited?.[1] === '1') return { accepted: false, detail: `--result-command exited 1 (rejected)` }
    return { accepted: undefined, detail: (error as Error).message }
  }
  const text = output.trim()
  if (text.startsWith('{')) {
    try {
      const json = JSON.parse(text) as Record<string, unknown>
      const status = typeof json.status === 'string' ? json.status : json.Status
      const accepted =
        typeof json.accepted === 'boolean'
          ? json.accepted
          : status === 'VERIFIED'
            ? true
            : status === 'REJECTED'
              ? false
              : undefined
      const reason =
        typeof json.reason === 'string'
          ? json.reason
          : typeof status === 'string'
            ? `Status ${status}${failedChecks(json)}`
            : JSON.stringify(json).slice(0, 300)
      return { accepted, detail: reason }
    } catch {}
  }
  return { accepted: true, detail: `--result-command exited 0${text ? `: ${text.slice(0, 200)}` : ''}` }
}

/** ` (check: message; …)` of a 4.7 answer's failed checks. */
function failedChecks(json: Record<string, unknown>): string {
  const validations = json.Validations as {
    checks?: { check: string; result: string; message: string }[]
  } | null
  const failed = (validations?.checks ?? []).filter((c) => c.result === 'failed')
  return failed.length ? ` (${failed.map((c) => `${c.check}: ${c.message}`).join('; ')})` : ''
}

/**
 * `--dc-api-command` output: JSON `{request: {protocol, data}, origin, response}` (docs/server-testing.md): the
 * entry the verifier's page hands navigator.credentials.get, the page's origin, the URL the page posts the
 * answer to.
 */
export function parseDcApiOutput(output: string): Omit<DcApiAsk, 'result'> {
  const text = output.trim()
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw new SourceError(
      `the DC API command printed no JSON object {request: {protocol, data}, origin, response}; it printed: ${JSON.stringify(text.slice(0, 200))}`,
    )
  }
  const o = json as Record<string, unknown> | null
  const request = o?.request as Record<string, unknown> | undefined
  const problems = [
    !(typeof request?.protocol === 'string') && 'request.protocol (a string)',
    !(typeof request?.data === 'object' && request?.data !== null) && 'request.data (an object)',
    !(typeof o?.origin === 'string') && 'origin (the calling page’s origin)',
    !(typeof o?.response === 'string' && URL.canParse(o.response)) &&
      'response (the URL to post the answer to)',
  ].filter(Boolean)
  if (problems.length > 0)
    throw new SourceError(
      `the DC API command's JSON lacks ${problems.join(', ')}: ${JSON.stringify(text.slice(0, 200))}`,
    )
  return {
    request: request as DcApiAsk['request'],
    origin: o?.origin as string,
    response: o?.response as string,
  }
}

/**
 * A request per case from `--request-command`, its verdict from `--result-command` when given; a request over
 * the Digital Credentials API per DC API case from `--dc-api-command` (the same `--result-command`, `{session}`
 * the last path segment of its response URL).
 */
export function commandRequests(opts: {
  requestCommand?: string
  resultCommand?: string
  dcApiCommand?: string
}): RequestSource {
  const resultCommand = opts.resultCommand
  const dcApiCommand = opts.dcApiCommand
  return {
    describe: [opts.requestCommand, dcApiCommand && `over the DC API: ${dcApiCommand}`]
      .filter(Boolean)
      .join('; '),
    links: opts.requestCommand !== undefined,
    ...(dcApiCommand !== undefined && {
      async nextDcApi() {
        const ask = parseDcApiOutput(await runCommand(dcApiCommand, {}, { what: '--dc-api-command' }))
        const session = new URL(ask.response).pathname.split('/').filter(Boolean).at(-1) ?? ''
        return {
          ...ask,
          ...(resultCommand
            ? { result: () => commandResult(resultCommand, { session, link: ask.response }) }
            : {}),
        }
      },
    }),
    async next() {
      if (opts.requestCommand === undefined)
        throw new SourceError('no --request-command: this run has requests over the DC API only')
      const link = parseRequestOutput(
        await runCommand(opts.requestCommand, {}, { what: '--request-command' }),
      )
      return {
        link,
        ...(resultCommand ? { result: (answer) => commandResult(resultCommand, { ...answer, link }) } : {}),
      }
    },
  }
}
