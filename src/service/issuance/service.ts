import { randomUUID } from 'node:crypto'
import type { Principal } from '../auth/tokens.ts'
import { AppError } from '../errors/problem.ts'
import type { ListCursor, ProcessRecord, ProcessStatus, Store } from '../store/index.ts'
import { type Clock, isoTime } from '../util/clock.ts'
import type { PublicUrls } from '../util/urls.ts'

export const PROCESS_TYPE = 'OIDC4VCI_PRE_AUTHORIZED'

/** The wire shape of an issuance process (section 2.2). */
export interface ProcessView {
  id: string
  status: ProcessStatus
  group: string
  type: string
  data?: unknown[]
  validator: unknown | null
  createdAt: string
  updatedAt: string
}

export function processView(p: ProcessRecord): ProcessView {
  return {
    id: p.id,
    status: p.status,
    group: p.templateId,
    type: p.type,
    ...(p.status === 'ISSUED' && p.data ? { data: p.data } : {}),
    validator: p.validator,
    createdAt: isoTime(p.createdAt),
    updatedAt: isoTime(p.updatedAt),
  }
}

export function encodeCursor(c: ListCursor): string {
  return Buffer.from(JSON.stringify([c.createdAt, c.id])).toString('base64url')
}

export function decodeCursor(text: string): ListCursor {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown[]
    if (typeof createdAt === 'number' && typeof id === 'string') return { createdAt, id }
  } catch {
    // fall through to the error below
  }
  throw new AppError('invalid_cursor', 'cursor is not one this service issued; take it from the Link header')
}

export interface ListOptions {
  status?: ProcessStatus
  limit: number
  cursor?: string
}

export class IssuanceService {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly urls: PublicUrls,
  ) {}

  /** Section 4.2: open a PENDING process for template `group` and build its offer deep link. */
  async createOffer(principal: Principal, group: string): Promise<{ uri: string; process: ProcessRecord }> {
    if (principal.template !== null && principal.template !== group) {
      throw new AppError(
        'template_not_allowed',
        `this token was issued for template "${principal.template}"; group "${group}" is not allowed`,
      )
    }
    const template = await this.store.templates.get(principal.tenantId, group, 'issuance')
    if (!template) throw new AppError('template_not_found', `no issuance template "${group}" in this tenant`)
    const now = this.clock.now()
    const process: ProcessRecord = {
      id: randomUUID(),
      tenantId: principal.tenantId,
      templateId: group,
      type: PROCESS_TYPE,
      status: 'PENDING',
      data: null,
      validator: null,
      createdByKey: principal.keyId,
      createdAt: now,
      updatedAt: now,
    }
    await this.store.processes.create(process)
    return { uri: this.urls.credentialOfferDeepLink(principal.tenantId, process.id), process }
  }

  /**
   * Section 4.3. Another tenant's process answers 404 exactly like an unknown id; a process of this
   * tenant but of a template the token is not linked to answers 403.
   */
  async getProcess(principal: Principal, id: string): Promise<ProcessRecord> {
    const process = await this.store.processes.get(id)
    if (!process || process.tenantId !== principal.tenantId) {
      throw new AppError('process_not_found', `no issuance process "${id}"`)
    }
    if (principal.template !== null && principal.template !== process.templateId) {
      throw new AppError(
        'process_not_linked',
        `process "${id}" belongs to template "${process.templateId}", not to this token's template "${principal.template}"`,
      )
    }
    return process
  }

  /** Section 4.5, tenant-scoped; returns one page and the cursor of the next, if any. */
  async listProcesses(principal: Principal, options: ListOptions) {
    const after = options.cursor === undefined ? undefined : decodeCursor(options.cursor)
    const rows = await this.store.processes.list({
      tenantId: principal.tenantId,
      ...(options.status ? { status: options.status } : {}),
      ...(after ? { after } : {}),
      limit: options.limit + 1,
    })
    const page = rows.slice(0, options.limit)
    const last = page.at(-1)
    const next = rows.length > options.limit && last ? encodeCursor(last) : undefined
    return { page, next }
  }
}
