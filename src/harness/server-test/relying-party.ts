// A deployment of the relying-party API this project implements (ours, or anyone's) as the source of a
// server test's flows: offers (4.2, content submitted at once over 4.4 or held back for a deferred case),
// verification sessions (4.6) and their verdicts (4.7), and the credentials the wallet presents (received
// over OpenID4VCI from the deployment's own issuance templates, one revoked over the status extension).
// The harness's own test issuer (test-issuer.ts) is such a deployment, embedded.

import {
  type ApiKeyCredentials,
  type DcqlSessionCreated,
  ok,
  parseCredentialOfferUri,
  RelyingPartyClient,
  type ServiceUrls,
  type SessionCreated,
  type SessionRead,
  sessionIdOf,
} from '../../client/index.ts'
import { defaultNamespace, MDOC_FORMAT } from '../../shared/mdoc.ts'
import type { Wallet } from '../../wallet/index.ts'
import { resolveExternal } from '../profile.ts'
import { sampleCredentials } from '../sandbox.ts'
import type { KeySecret } from '../target-types.ts'
import type { DcApiAsk, OfferSource, ReportedResult, RequestSource } from './sources.ts'

export interface Deployment {
  /** how the reports name it */
  describe: string
  urls: ServiceUrls
  tenant: string
  /** an application key linked to `issuanceTemplate` */
  appKey: KeySecret
  adminKey: KeySecret
  issuanceTemplate: string
  /** the verification template of the profile (`templates.other`), when it is one */
  verificationTemplate?: string
  fetch?: typeof fetch
}

/** The deployment a profile file describes (docs/targets.md's keys; the environment wins key by key). */
export function deploymentFromProfile(file: string, env: NodeJS.ProcessEnv = process.env): Deployment {
  const settings = resolveExternal({ ...env, VC_HARNESS_PROFILE: file })
  return {
    describe: `the deployment of ${file} (tenant ${settings.tenant.tenant})`,
    urls: settings.urls,
    tenant: settings.tenant.tenant,
    appKey: settings.tenant.appKey,
    adminKey: settings.tenant.adminKey,
    issuanceTemplate: settings.tenant.issuanceTemplate,
    verificationTemplate: settings.tenant.otherTemplate,
  }
}

/** What an issuance template issues: its credential type, format and (mso_mdoc) doctype. */
export interface TemplateKind {
  credentialType: string
  format?: string
  doctype?: string
}

/** The elements of a sample mdoc (ISO/IEC 18013-5 §7.2.1; the EUDI PID names them alike). */
const MDOC_SAMPLE = { family_name: 'Doe', given_name: 'Jane', birth_date: '1990-01-01', age_over_18: true }

/**
 * The content submitted for a template (4.4): the sandbox's samples, or for an mso_mdoc template the sample
 * elements in its doctype's own namespace (docs/issuance.md "ISO mdoc").
 */
export function sampleContent(kind: TemplateKind): Record<string, unknown>[] {
  if (kind.format !== MDOC_FORMAT) return sampleCredentials(kind.credentialType)
  const doctype = kind.doctype ?? kind.credentialType
  return [
    {
      type: ['VerifiableCredential', kind.credentialType],
      credentialSubject: { [defaultNamespace(doctype)]: { ...MDOC_SAMPLE } },
    },
  ]
}

const key = (k: KeySecret, tenant: string, ssiconfig?: string): ApiKeyCredentials => ({
  keyId: k.id,
  secret: k.secret,
  tenant,
  ...(ssiconfig !== undefined ? { ssiconfig } : {}),
})

/**
 * Application keys of one deployment per template: the profile's own for its issuance template, others
 * created by its administrator key when first needed and revoked by `close()`.
 */
export class DeploymentKeys {
  readonly client: RelyingPartyClient
  private readonly keys = new Map<string, KeySecret>()
  private readonly created: string[] = []

  constructor(readonly deployment: Deployment) {
    this.client = new RelyingPartyClient(deployment.urls, deployment.fetch ?? fetch)
    this.keys.set(deployment.issuanceTemplate, deployment.appKey)
  }

  /** A relying-party token for `template`. */
  async token(template: string): Promise<string> {
    const d = this.deployment
    let appKey = this.keys.get(template)
    if (!appKey) {
      const admin = await this.client.token(key(d.adminKey, d.tenant))
      const made = ok<{ id: string; secret: string }>(
        await this.client.createApiKey(admin, {
          role: 'app',
          template,
          label: `vc-harness server test (${template})`,
        }),
        `create an application key for template ${template} with the profile's admin key`,
      )
      appKey = { id: made.id, secret: made.secret }
      this.keys.set(template, appKey)
      this.created.push(made.id)
    }
    return this.client.token(key(appKey, d.tenant, template))
  }

  private readonly kinds = new Map<string, TemplateKind>()

  /** What an issuance template issues (its content must end with the credential type), read with the admin key. */
  async templateKind(template: string): Promise<TemplateKind> {
    const known = this.kinds.get(template)
    if (known) return known
    const d = this.deployment
    const admin = await this.client.token(key(d.adminKey, d.tenant))
    const view = ok<TemplateKind>(
      await this.client.getTemplate(admin, 'issuance', template),
      `read issuance template ${template} with the profile's admin key`,
    )
    const kind = {
      credentialType: view.credentialType,
      ...(view.format !== undefined && { format: view.format }),
      ...(view.doctype !== undefined && { doctype: view.doctype }),
    }
    this.kinds.set(template, kind)
    return kind
  }

  /** Revokes the keys this run created. */
  async close(): Promise<void> {
    if (this.created.length === 0) return
    const d = this.deployment
    const admin = await this.client.token(key(d.adminKey, d.tenant))
    for (const id of this.created.splice(0)) await this.client.revokeApiKey(admin, id)
  }
}

/** Opens an offer of `template`; its content is submitted now, or when `complete` is called. */
async function openOffer(keys: DeploymentKeys, template: string, deferred: boolean) {
  const client = keys.client
  const token = await keys.token(template)
  const offer = ok<{ credential_offer_uri: string; tx_code?: string }>(
    await client.createOffer(token, template),
    `create an offer of template ${template} (4.2)`,
  )
  const { processId } = parseCredentialOfferUri(offer.credential_offer_uri)
  const kind = await keys.templateKind(template)
  const submit = async () => {
    ok(
      await client.submitCredentials(token, processId, sampleContent(kind)),
      `submit the content of process ${processId} (4.4)`,
    )
  }
  if (!deferred) await submit()
  return {
    link: offer.credential_offer_uri,
    processId,
    token,
    ...(offer.tx_code !== undefined ? { txCode: offer.tx_code } : {}),
    submit,
  }
}

/** Offers of the deployment's issuance template: content submitted at once, or on completion (deferred). */
export function deploymentOffers(
  keys: DeploymentKeys,
  template = keys.deployment.issuanceTemplate,
): OfferSource {
  return {
    describe: `${keys.deployment.describe}, issuance template ${template}`,
    async next(kind) {
      const opened = await openOffer(keys, template, kind === 'deferred')
      return {
        link: opened.link,
        ...(opened.txCode !== undefined ? { txCode: opened.txCode } : {}),
        ...(kind === 'deferred' ? { complete: () => opened.submit() } : {}),
      }
    },
  }
}

/** 4.7's verdict of a session, once it is final (waits up to `waitMs` for the wallet's answer to land). */
async function sessionResult(
  client: RelyingPartyClient,
  token: string,
  sessionId: string,
  waitMs = 5_000,
): Promise<ReportedResult> {
  const deadline = Date.now() + waitMs
  for (;;) {
    const read = await client.readSession(token, sessionId)
    if (read.status === 200) {
      const session = read.body as SessionRead
      const failed = (session.Validations?.checks ?? [])
        .filter((c) => c.result === 'failed')
        .map((c) => `${c.check}: ${c.message}`)
      return {
        accepted: session.Status === 'VERIFIED' ? true : session.Status === 'REJECTED' ? false : undefined,
        detail: `4.7 Status ${session.Status}${failed.length ? ` (${failed.join('; ')})` : ''}`,
      }
    }
    if (read.status !== 202 || Date.now() > deadline)
      return { accepted: undefined, detail: `4.7 answered ${read.status} (the session is not final)` }
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Verification sessions of `template`, each judged by 4.7. */
export function deploymentRequests(keys: DeploymentKeys, template: string): RequestSource {
  return {
    describe: `${keys.deployment.describe}, verification template ${template}`,
    async next() {
      const token = await keys.token(template)
      const created = ok<SessionCreated | DcqlSessionCreated>(
        await keys.client.createSession<SessionCreated | DcqlSessionCreated>(token, template),
        `create a verification session of template ${template} (4.6)`,
      )
      const sessionId = sessionIdOf(created)
      return {
        link: created.authentication_request,
        result: () => sessionResult(keys.client, token, sessionId),
      }
    },
    // OpenID4VP 1.0 Appendix A: a session of a template with dcql.dcApi is offered over the DC API too
    // (4.6's dcApi): its request entry fetched, answered from the first expected origin, posted to its response.
    async nextDcApi(fetch) {
      const token = await keys.token(template)
      const created = ok<SessionCreated | DcqlSessionCreated>(
        await keys.client.createSession<SessionCreated | DcqlSessionCreated>(token, template),
        `create a verification session of template ${template} (4.6)`,
      )
      const dcApi = 'dcApi' in created ? created.dcApi : undefined
      if (!dcApi) return undefined
      const sessionId = sessionIdOf(created)
      const answer = await fetch(dcApi.request, { headers: { accept: 'application/json' } })
      const text = await answer.text()
      if (answer.status !== 200)
        throw new Error(
          `GET ${dcApi.request} (the DC API request entry) answered ${answer.status}: ${text.slice(0, 200)}`,
        )
      return {
        request: JSON.parse(text) as DcApiAsk['request'],
        origin: dcApi.expectedOrigins[0] as string,
        response: dcApi.response,
        result: () => sessionResult(keys.client, token, sessionId),
      }
    },
    close: () => keys.close(),
  }
}

/** The credentials a verifier test presents, and how one gets revoked. */
export interface CredentialSupply {
  readonly describe: string
  /** receives one credential of every template into `wallet` */
  fill(wallet: Wallet): Promise<void>
  /** receives one more credential into `wallet` and has its issuer revoke it; undefined: this supply cannot */
  revoked?(wallet: Wallet): Promise<void>
}

/** Credentials received from the deployment's `templates` over OpenID4VCI (pre-authorized code). */
export function deploymentCredentials(keys: DeploymentKeys, templates: readonly string[]): CredentialSupply {
  const receive = async (wallet: Wallet, template: string) => {
    const opened = await openOffer(keys, template, false)
    await wallet.receive(opened.link, { ...(opened.txCode !== undefined ? { txCode: opened.txCode } : {}) })
    return opened
  }
  return {
    describe: `${keys.deployment.describe}, issuance templates ${templates.join(', ')}`,
    async fill(wallet) {
      for (const template of templates) await receive(wallet, template)
    },
    async revoked(wallet) {
      const opened = await receive(wallet, templates[0] as string)
      ok(
        await keys.client.setCredentialStatus(opened.token, opened.processId, { status: 'revoked' }),
        `revoke the credential of process ${opened.processId}`,
      )
    },
  }
}
