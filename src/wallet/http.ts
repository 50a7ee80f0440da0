// Plain HTTP for the calls the wallet makes itself (deferred credential, notification, diagnostics):
// undici.request by default (a fraction of the CPU of fetch), or a caller-supplied fetch.
import { request } from 'undici'
import { FORM_MEDIA_TYPE } from '../shared/wire.ts'

export type FetchLike = typeof fetch

export interface HttpAnswer {
  status: number
  headers: Record<string, string>
  text: string
  /** parsed JSON when the body is JSON, else the text (undefined when empty) */
  body: unknown
}

export interface HttpRequest {
  method: 'GET' | 'POST'
  json?: unknown
  form?: Record<string, string>
  bearer?: string
  /** Accept header; default application/json */
  accept?: string
  /** answer a 3xx as it is instead of following it (a caller-supplied fetch follows by default; undici never does) */
  noRedirects?: boolean
}

function parseBody(text: string, contentType: string | undefined): unknown {
  if (text.length === 0) return undefined
  if (contentType?.includes('json') || /^\s*[{[]/.test(text)) {
    try {
      return JSON.parse(text)
    } catch {}
  }
  return text
}

export async function httpRequest(url: string, req: HttpRequest, fetchImpl?: FetchLike): Promise<HttpAnswer> {
  const headers: Record<string, string> = { accept: req.accept ?? 'application/json' }
  let body: string | undefined
  if (req.json !== undefined) {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(req.json)
  } else if (req.form !== undefined) {
    headers['content-type'] = FORM_MEDIA_TYPE
    body = new URLSearchParams(req.form).toString()
  }
  if (req.bearer) headers.authorization = `Bearer ${req.bearer}`

  if (fetchImpl) {
    const response = await fetchImpl(url, {
      method: req.method,
      headers,
      ...(body !== undefined && { body }),
      ...(req.noRedirects && { redirect: 'manual' as const }),
    })
    const text = await response.text()
    const flat: Record<string, string> = {}
    response.headers.forEach((value, key) => {
      flat[key] = value
    })
    return { status: response.status, headers: flat, text, body: parseBody(text, flat['content-type']) }
  }
  const response = await request(url, { method: req.method, headers, ...(body !== undefined && { body }) })
  const text = await response.body.text()
  const flat: Record<string, string> = {}
  for (const [key, value] of Object.entries(response.headers)) {
    if (value !== undefined) flat[key] = Array.isArray(value) ? value.join(', ') : value
  }
  return { status: response.statusCode, headers: flat, text, body: parseBody(text, flat['content-type']) }
}
