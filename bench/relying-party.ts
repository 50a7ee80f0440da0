// The relying party's calls of a bench flow (4.1, 4.2, 4.4, 4.6, 4.7), on undici.request: with Node's
// fetch the load generator would spend 4–7× the CPU per request (DEPENDENCIES.md) and measure itself.

import { type Dispatcher, request } from 'undici'
import type { ServiceUrls, SessionCreated, SessionRead } from '../src/client/index.ts'
import type { KeySecret } from './protocol.ts'

/** A failed step of a flow: `kind` is what the error report counts (`<step>: <kind>`). */
export class StepError extends Error {
  override name = 'StepError'
  constructor(
    readonly step: string,
    readonly kind: string,
    message: string,
  ) {
    super(`${step}: ${message}`)
  }
}

interface Answer {
  status: number
  body: unknown
  headers: Record<string, string | string[] | undefined>
}

/** What a failed answer says, shortest useful form: a problem's code/detail or an OAuth error. */
function describe(answer: Answer): { kind: string; message: string } {
  const body = answer.body as Record<string, unknown> | string | null
  if (body && typeof body === 'object') {
    const code = body.code ?? body.error
    const detail = body.detail ?? body.error_description ?? body.title
    return {
      kind: `HTTP ${answer.status}${code ? ` ${String(code)}` : ''}`,
      message: `HTTP ${answer.status}${code ? ` ${String(code)}` : ''}${detail ? `: ${String(detail)}` : ''}`,
    }
  }
  return { kind: `HTTP ${answer.status}`, message: `HTTP ${answer.status} ${String(body).slice(0, 200)}` }
}

export class BenchRelyingParty {
  constructor(
    private readonly urls: ServiceUrls,
    private readonly dispatcher: Dispatcher,
  ) {}

  private async call(
    step: string,
    url: string,
    options: { method: 'GET' | 'POST' | 'PATCH'; headers?: Record<string, string>; body?: unknown },
  ): Promise<Answer> {
    let response: Dispatcher.ResponseData
    try {
      response = await request(url, {
        dispatcher: this.dispatcher,
        method: options.method,
        headers: {
          ...options.headers,
          ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      })
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? (error as Error).name
      throw new StepError(step, `network ${code}`, `${code}: ${(error as Error).message}`)
    }
    const text = await response.body.text()
    let body: unknown = text
    if (/json/.test(String(response.headers['content-type'] ?? '')) && text !== '') body = JSON.parse(text)
    return { status: response.statusCode, body, headers: response.headers }
  }

  private expect(step: string, answer: Answer, status: number): Answer {
    if (answer.status === status) return answer
    const { kind, message } = describe(answer)
    throw new StepError(step, kind, `expected ${status}, got ${message}`)
  }

  /** 4.1; the token comes back in the `Token` header. */
  async login(credentials: KeySecret & { tenant: string; ssiconfig?: string }): Promise<string> {
    const headers: Record<string, string> = {
      authorization: `Basic ${Buffer.from(`${credentials.keyId}:${credentials.secret}`).toString('base64')}`,
      tenant: credentials.tenant,
    }
    if (credentials.ssiconfig !== undefined) headers.ssiconfig = credentials.ssiconfig
    const answer = this.expect(
      'login',
      await this.call('login', `${this.urls.authUrl}/admin/v1/api_keys/login`, { method: 'POST', headers }),
      200,
    )
    const token = answer.headers.token
    if (typeof token !== 'string' || token === '') throw new StepError('login', 'no token', 'no Token header')
    return token
  }

  /** 4.2: the offer deep link. */
  async createOffer(token: string, group: string): Promise<string> {
    const answer = this.expect(
      'offer',
      await this.call('offer', `${this.urls.issuerUrl}/api/v3/oidc-issuance/credential-offer`, {
        method: 'POST',
        headers: { authorization: `jwt ${token}` },
        body: { group },
      }),
      201,
    )
    return (answer.body as { credential_offer_uri: string }).credential_offer_uri
  }

  /** The peer's offers: a plain POST to its offer desk (no relying-party API there). */
  async deskOffer(desk: string): Promise<string> {
    const answer = this.expect('offer', await this.call('offer', desk, { method: 'POST', body: {} }), 200)
    return (answer.body as { credential_offer_uri: string }).credential_offer_uri
  }

  /** 4.4 */
  async submit(token: string, processId: string, content: unknown): Promise<void> {
    this.expect(
      'submit',
      await this.call(
        'submit',
        `${this.urls.issuerUrl}/admin/v1/issuanceRequests/${encodeURIComponent(processId)}/credentials`,
        { method: 'PATCH', headers: { authorization: `jwt ${token}` }, body: content },
      ),
      200,
    )
  }

  /** 4.6 */
  async createSession(token: string, ssiConfigId: string): Promise<SessionCreated> {
    const answer = this.expect(
      'session',
      await this.call('session', `${this.urls.verifierUrl}/api/v3/sessions`, {
        method: 'POST',
        headers: { authorization: `jwt ${token}` },
        body: { ssiConfigId },
      }),
      201,
    )
    return answer.body as SessionCreated
  }

  /** 4.7: must be final and VERIFIED; anything else names the failed checks. */
  async readVerified(token: string, id: string): Promise<SessionRead> {
    const answer = this.expect(
      'read',
      await this.call('read', `${this.urls.verifierUrl}/api/v3/sessions/${encodeURIComponent(id)}`, {
        method: 'GET',
        headers: { authorization: `jwt ${token}` },
      }),
      200,
    )
    const session = answer.body as SessionRead
    if (session.Status !== 'VERIFIED') {
      const failed = session.Validations?.checks.filter((c) => c.result === 'failed') ?? []
      throw new StepError(
        'read',
        `Status ${session.Status}`,
        `session ${id} is ${session.Status}${failed.length ? `: ${failed.map((c) => `${c.check} (${c.message})`).join('; ')}` : ''}`,
      )
    }
    return session
  }
}

/** The process id an offer link ends with (our service and the bare baseline: the offer URL's last segment). */
export function processIdOf(link: string): string {
  const query = link.slice(link.indexOf('?') + 1)
  const offerUrl = new URLSearchParams(query).get('credential_offer_uri')
  if (!offerUrl)
    throw new StepError('offer', 'no offer uri', `offer link has no credential_offer_uri: ${link}`)
  return decodeURIComponent(new URL(offerUrl).pathname.split('/').pop() ?? '')
}
