// <vc-flow-qr>: a relying party's QR page component. It asks the relying party's backend (never the service:
// it holds no API key) for a credential offer or a verification session, renders the deep link as a QR code
// and as a same-device link, and follows the flow over a WebSocket, polling when the socket cannot be used.
// A verification whose backend offers the Digital Credentials API (OpenID4VP 1.0 Appendix A) also gets a
// "Use a wallet on this device" button, in browsers that have the API: it hands the request to
// navigator.credentials.get and posts the wallet's answer to the backend; the QR code stays as the fallback.
// Bundled by esbuild at serve start (src/demo/assets.ts); docs/qr-page.md documents its API.
//
//   <vc-flow-qr kind="issuance|verification" api="/demo/api" transport="auto|websocket|polling"
//               poll-interval="1500" dc-api="auto|off"></vc-flow-qr>
//
// Attribute `state` (loading, waiting, scanned, issued, verified, rejected, expired, error) and a
// `vc-flow-state` event on each change; attribute `profile` (pe, dcql) on a verification flow; attribute
// `dc-api-offered` while the DC API button is offered and a `vc-flow-dc-api` event at each step of its use
// (asking, sent, cancelled, failed); slots title, waiting, scanned, done, rejected, expired, error; parts
// container, title, dc-api, dc-api-status, qr, deep-link, link-copy, link-text, copy, tx-code, request, profile,
// requested, status, outcome, outcome-title, failed-checks, check, shared, credential, claims, refresh.

import QRCode from 'qrcode'
import {
  asDcApiMessage,
  asDcApiOffer,
  asFlowStatus,
  asRequested,
  type DcApiOffer,
  dcApiUsable,
  type FlowCreated,
  type FlowKind,
  type FlowOutcome,
  type FlowStatus,
  isFinal,
  isSafeDeepLink,
  type PageState,
  PROFILE_NAMES,
  pageState,
  pageText,
  requestedText,
} from './flow-state.ts'

export type Transport = 'auto' | 'websocket' | 'polling'

/** `detail` of the `vc-flow-dc-api` event: one step of a use of the Digital Credentials API. */
export interface DcApiDetail {
  /**
   * asking: the request went to `navigator.credentials.get` (the browser's wallet selection is open);
   * sent: the wallet answered and the backend took the answer (the flow's state says verified or rejected);
   * cancelled: the browser's promise was rejected with NotAllowedError or AbortError (the user closed the
   * dialog, no wallet could answer) or resolved with nothing; failed: anything else went wrong.
   */
  phase: 'asking' | 'sent' | 'cancelled' | 'failed'
  flowId: string
  /** The request entry's exchange protocol, e.g. openid4vp-v1-signed. */
  protocol: string
  /** cancelled, failed: the DOMException's name (NotAllowedError, AbortError, …) or the backend's code. */
  reason?: string
  /** cancelled, failed: what the page shows (part dc-api-status). */
  message?: string
}

/** `detail` of the `vc-flow-state` event. */
export interface FlowStateDetail {
  state: PageState
  previous: PageState
  kind: FlowKind
  /** The process or session id; undefined before the backend answered. */
  flowId: string | undefined
  /** The deep link the QR code carries. */
  link: string | undefined
  /** The service status and step that caused the change (undefined for loading and error). */
  status: FlowStatus['status'] | undefined
  step: string | undefined
  at: string | undefined
  /** The transport that delivered it: websocket or polling (none before following). */
  transport: 'websocket' | 'polling' | 'none'
  /** error: what went wrong. */
  message?: string
  /** verified or rejected: the failed checks or the shared claims, when the backend sent them. */
  outcome?: FlowOutcome
}

const DEFAULT_POLL_MS = 1500
const MAX_POLL_BACKOFF_MS = 10_000
/** A socket that has not opened by then is given up (auto: polling takes over). */
const SOCKET_OPEN_TIMEOUT_MS = 5000

const STYLE = `
:host { display: inline-block; font: inherit; color: inherit; max-width: 100%; }
:host([hidden]) { display: none; }
[part~="container"] { display: flex; flex-direction: column; align-items: center; gap: .75rem; padding: 1rem;
  border: 1px solid #d0d4dc; border-radius: .75rem; background: #fff; color: #1b1f24; }
[part~="title"] { margin: 0; font-size: 1.2rem; font-weight: 600; text-align: center; }
[part~="qr"] { display: block; width: 288px; height: 288px; max-width: 100%; image-rendering: pixelated; }
[part~="deep-link"] { display: inline-block; padding: .6rem 1.2rem; border-radius: .5rem; background: #1f5fd6;
  color: #fff; text-decoration: none; font-weight: 600; }
[part~="deep-link"]:focus-visible, [part~="refresh"]:focus-visible { outline: 3px solid #f0b400; outline-offset: 2px; }
[part~="link-copy"] { display: flex; gap: .4rem; width: 288px; max-width: 100%; }
[part~="link-text"] { flex: 1; min-width: 0; font: .8rem ui-monospace, monospace; padding: .35rem .4rem;
  border: 1px solid #d0d4dc; border-radius: .35rem; color: #3d4450; background: #f7f8fa; }
[part~="copy"] { font: inherit; font-size: .85rem; padding: .35rem .7rem; border-radius: .35rem;
  border: 1px solid #1f5fd6; background: #fff; color: #1f5fd6; cursor: pointer; }
[part~="copy"]:focus-visible, [part~="link-text"]:focus-visible { outline: 3px solid #f0b400; outline-offset: 2px; }
[part~="outcome"] { max-width: 320px; font-size: .9rem; overflow-wrap: anywhere; }
[part~="outcome-title"] { margin: 0 0 .25rem; font-weight: 600; }
[part~="failed-checks"], [part~="claims"] { margin: 0 0 .5rem; padding-left: 1.1rem; }
[part~="check"] { font-family: ui-monospace, monospace; font-weight: 600; }
[part~="credential"] { margin: .25rem 0; color: #3d4450; }
[part~="tx-code"] { margin: 0; font-family: ui-monospace, monospace; font-size: 1.1rem; }
[part~="request"] { max-width: 288px; font-size: .85rem; color: #3d4450; overflow-wrap: anywhere; }
[part~="profile"] { margin: 0 0 .25rem; font-weight: 600; }
[part~="requested"] { margin: 0; padding-left: 1.1rem; }
[part~="status"] { margin: 0; min-height: 1.5em; text-align: center; }
[part~="dc-api"] { font: inherit; font-weight: 600; padding: .6rem 1.2rem; border-radius: .5rem; border: 0;
  background: #0f7b4f; color: #fff; cursor: pointer; }
[part~="dc-api"]:disabled { opacity: .6; cursor: progress; }
[part~="dc-api"]:focus-visible { outline: 3px solid #f0b400; outline-offset: 2px; }
[part~="dc-api-status"] { margin: 0; max-width: 288px; font-size: .85rem; color: #3d4450; text-align: center; }
[part~="refresh"] { font: inherit; padding: .5rem 1rem; border-radius: .5rem; border: 1px solid #1f5fd6;
  background: #fff; color: #1f5fd6; cursor: pointer; }
.when { display: none; }
:host([state="waiting"]) .when.waiting, :host([state="scanned"]) .when.scanned,
:host([state="issued"]) .when.done, :host([state="verified"]) .when.done,
:host([state="rejected"]) .when.rejected, :host([state="expired"]) .when.expired,
:host([state="error"]) .when.error { display: block; }
.live { display: none; }
:host([state="waiting"]) .live, :host([state="scanned"]) .live { display: flex; flex-direction: column;
  align-items: center; gap: .75rem; }
:host([state="scanned"]) [part~="qr"] { opacity: .35; }
:host([state="scanned"]) [part~="qr"].unanswered { opacity: 1; }
[hidden] { display: none !important; }
`

const MARKUP = `
<div part="container">
  <slot name="title"><h2 part="title"></h2></slot>
  <div class="live">
    <button part="dc-api" type="button" hidden>Use a wallet on this device</button>
    <p part="dc-api-status" role="status" aria-live="polite" hidden></p>
    <canvas part="qr" role="img" width="288" height="288"></canvas>
    <a part="deep-link" rel="noopener">Open in wallet</a>
    <div part="link-copy">
      <input part="link-text" type="text" readonly spellcheck="false" aria-label="The deep link, to copy">
      <button part="copy" type="button">Copy</button>
    </div>
    <p part="tx-code" hidden></p>
    <div part="request" hidden>
      <p part="profile"></p>
      <ul part="requested" aria-label="What the request asks for"></ul>
    </div>
  </div>
  <p part="status" role="status" aria-live="polite"></p>
  <div part="outcome" hidden>
    <p part="outcome-title"></p>
    <ul part="failed-checks" hidden></ul>
    <div part="shared" hidden></div>
  </div>
  <div class="when waiting"><slot name="waiting"></slot></div>
  <div class="when scanned"><slot name="scanned"></slot></div>
  <div class="when done"><slot name="done"></slot></div>
  <div class="when rejected"><slot name="rejected"></slot></div>
  <div class="when expired"><slot name="expired"></slot></div>
  <div class="when error"><slot name="error"></slot></div>
  <button part="refresh" type="button" hidden>Start again</button>
</div>`

/** What the DC API changes in the status text: the button is offered; an attempt ended without an answer. */
interface DcApiStatus {
  offered: boolean
  unanswered: boolean
}

function statusText(
  state: PageState,
  kind: FlowKind,
  message?: string,
  dcApi: DcApiStatus = { offered: false, unanswered: false },
): string {
  const issuance = kind === 'issuance'
  switch (state) {
    case 'loading':
      return issuance ? 'Preparing your credential offer…' : 'Preparing the verification request…'
    case 'waiting':
      if (dcApi.offered)
        return 'Use a wallet on this device, or scan the QR code with the wallet on your phone.'
      return issuance
        ? 'Scan the QR code with your wallet, or open the link on this device.'
        : 'Scan the QR code with your wallet to share your credential, or open the link on this device.'
    case 'scanned':
      // The page itself fetched the request for the DC API, and no wallet took it: the QR code is the way.
      if (dcApi.unanswered)
        return 'Waiting for a wallet: scan the QR code, or try a wallet on this device again.'
      return issuance
        ? 'Your wallet has the offer: accept it in the wallet.'
        : 'Your wallet has the request: confirm the presentation in the wallet.'
    case 'issued':
      return 'Credential issued: it is in your wallet.'
    case 'verified':
      return 'Presentation verified.'
    case 'rejected':
      return issuance ? 'The issuance was rejected.' : 'The presentation was rejected.'
    case 'expired':
      return issuance
        ? 'This offer expired. Start again for a new QR code.'
        : 'This request expired. Start again for a new QR code.'
    case 'error':
      return `Something went wrong${message ? `: ${message}` : ''}. Start again to retry.`
  }
}

export class VcFlowQr extends HTMLElement {
  static readonly observedAttributes = ['kind', 'api', 'transport', 'dc-api']

  readonly #root: ShadowRoot
  readonly #qr: HTMLCanvasElement
  readonly #link: HTMLAnchorElement
  readonly #txCode: HTMLElement
  readonly #request: HTMLElement
  readonly #profile: HTMLElement
  readonly #requested: HTMLElement
  readonly #status: HTMLElement
  readonly #title: HTMLElement
  readonly #refresh: HTMLButtonElement
  readonly #linkText: HTMLInputElement
  readonly #copy: HTMLButtonElement
  readonly #outcome: HTMLElement
  readonly #outcomeTitle: HTMLElement
  readonly #failedChecks: HTMLElement
  readonly #shared: HTMLElement
  readonly #dcApiButton: HTMLButtonElement
  readonly #dcApiStatus: HTMLElement
  /** The flow's DC API offer, validated; undefined when the flow has none. */
  #dcApi: DcApiOffer | undefined
  /** The use of the DC API under way: its abort controller (also aborted when the flow stops). */
  #dcApiCall: AbortController | undefined
  /**
   * The page fetched this flow's DC API request (the service says `scanned`) and the attempt ended without an
   * answer: the QR code is not dimmed and the status text points to it.
   */
  #dcApiUnanswered = false
  #copyReset: ReturnType<typeof setTimeout> | undefined
  #state: PageState = 'loading'
  #flow: FlowCreated | undefined
  /** Bumped by every start and stop: callbacks of an older flow see a different number and do nothing. */
  #generation = 0
  #started = false
  #socket: WebSocket | undefined
  #pollTimer: ReturnType<typeof setTimeout> | undefined
  #fetches: AbortController | undefined
  #transport: 'websocket' | 'polling' | 'none' = 'none'

  constructor() {
    super()
    this.#root = this.attachShadow({ mode: 'open' })
    const style = document.createElement('style')
    style.textContent = STYLE
    const template = document.createElement('template')
    template.innerHTML = MARKUP
    this.#root.append(style, template.content.cloneNode(true))
    const part = <T extends Element>(name: string) => this.#root.querySelector(`[part~="${name}"]`) as T
    this.#qr = part<HTMLCanvasElement>('qr')
    this.#link = part<HTMLAnchorElement>('deep-link')
    this.#txCode = part<HTMLElement>('tx-code')
    this.#request = part<HTMLElement>('request')
    this.#profile = part<HTMLElement>('profile')
    this.#requested = part<HTMLElement>('requested')
    this.#status = part<HTMLElement>('status')
    this.#title = part<HTMLElement>('title')
    this.#refresh = part<HTMLButtonElement>('refresh')
    this.#refresh.addEventListener('click', () => this.refresh())
    this.#linkText = part<HTMLInputElement>('link-text')
    this.#copy = part<HTMLButtonElement>('copy')
    this.#outcome = part<HTMLElement>('outcome')
    this.#outcomeTitle = part<HTMLElement>('outcome-title')
    this.#failedChecks = part<HTMLElement>('failed-checks')
    this.#shared = part<HTMLElement>('shared')
    this.#dcApiButton = part<HTMLButtonElement>('dc-api')
    this.#dcApiStatus = part<HTMLElement>('dc-api-status')
    this.#dcApiButton.addEventListener('click', () => {
      // Never throws out of the element: every failure is shown in dc-api-status.
      this.#useDcApi().catch(() => {})
    })
    this.#copy.addEventListener('click', () => void this.#copyLink())
    this.#linkText.addEventListener('focus', () => this.#linkText.select())
  }

  /** issuance (default) or verification. */
  get kind(): FlowKind {
    return this.getAttribute('kind') === 'verification' ? 'verification' : 'issuance'
  }
  /** The backend's API base (no trailing slash); default /demo/api. */
  get api(): string {
    return (this.getAttribute('api') ?? '/demo/api').replace(/\/+$/, '')
  }
  get transport(): Transport {
    const value = this.getAttribute('transport')
    return value === 'websocket' || value === 'polling' ? value : 'auto'
  }
  /** `auto` (default): offer the Digital Credentials API where the flow and the browser allow it; `off`: never. */
  get dcApiMode(): 'auto' | 'off' {
    return this.getAttribute('dc-api') === 'off' ? 'off' : 'auto'
  }
  /** Whether "Use a wallet on this device" is offered now (also the `dc-api-offered` attribute). */
  get dcApiOffered(): boolean {
    return this.hasAttribute('dc-api-offered')
  }
  get pollInterval(): number {
    const value = Number(this.getAttribute('poll-interval'))
    return Number.isFinite(value) && value >= 250 ? value : DEFAULT_POLL_MS
  }
  /** The current state (also the `state` attribute). */
  get state(): PageState {
    return this.#state
  }
  /** The flow being shown: id, deep link, template, expiry; undefined while loading. */
  get flow(): Readonly<FlowCreated> | undefined {
    return this.#flow
  }

  connectedCallback() {
    if (!this.#started) void this.refresh()
  }

  disconnectedCallback() {
    // Stop following; a reconnected element starts a fresh flow.
    this.#stop()
    this.#started = false
  }

  attributeChangedCallback(name: string, old: string | null, value: string | null) {
    if (old === value || !this.#started || !this.isConnected) return
    // dc-api only shows or hides the button; the other attributes start a new flow.
    if (name === 'dc-api') this.#offerDcApi()
    else void this.refresh()
  }

  /** Starts a new flow (a new offer or session, a new QR code); what was followed before is dropped. */
  async refresh(): Promise<void> {
    this.#stop()
    this.#started = true
    const generation = this.#generation
    const kind = this.kind
    this.#flow = undefined
    this.#transport = 'none'
    this.removeAttribute('active-transport')
    this.#title.textContent = kind === 'issuance' ? 'Receive a credential' : 'Share a credential'
    this.#link.removeAttribute('href')
    this.#linkText.value = ''
    this.#copy.textContent = 'Copy'
    this.#showOutcome(undefined)
    this.#txCode.hidden = true
    this.#request.hidden = true
    this.#requested.replaceChildren()
    this.removeAttribute('profile')
    this.#dcApi = undefined
    this.#dcApiUnanswered = false
    this.#showDcApiStatus(undefined)
    this.#offerDcApi()
    this.#setState('loading', undefined)
    const controller = new AbortController()
    this.#fetches = controller
    try {
      const response = await fetch(`${this.api}/${kind}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: '{}',
        credentials: 'same-origin',
        cache: 'no-store',
        signal: controller.signal,
      })
      const body = (await response.json().catch(() => ({}))) as Partial<FlowCreated> & { detail?: string }
      if (!response.ok) throw new Error(body.detail ?? `the backend answered HTTP ${response.status}`)
      if (
        typeof body.id !== 'string' ||
        typeof body.link !== 'string' ||
        !isSafeDeepLink(body.link) ||
        !Array.isArray(body.credentialTypes)
      ) {
        throw new Error('the backend answered no usable deep link')
      }
      if (generation !== this.#generation) return
      const flow = body as FlowCreated
      await QRCode.toCanvas(this.#qr, flow.link, {
        width: 288,
        margin: 4,
        errorCorrectionLevel: 'M',
        color: { dark: '#000000', light: '#ffffff' },
      })
      if (generation !== this.#generation) return
      this.#flow = flow
      this.#qr.setAttribute('aria-label', `QR code of the deep link ${flow.link}`)
      this.#link.href = flow.link
      this.#linkText.value = flow.link
      this.#title.textContent =
        kind === 'issuance'
          ? `Receive your ${flow.credentialTypes.join(', ')}`
          : `Share your ${flow.credentialTypes.join(', ')}`
      if (flow.txCode) {
        this.#txCode.textContent = `Transaction code: ${flow.txCode}`
        this.#txCode.hidden = false
      }
      this.#showRequest(flow)
      this.#dcApi = flow.kind === 'verification' ? asDcApiOffer(flow.dcApi) : undefined
      this.#offerDcApi()
      this.#setState('waiting', { kind, id: flow.id, status: 'PENDING', step: 'created', at: '' })
      this.#follow(generation)
    } catch (error) {
      if (generation !== this.#generation) return
      this.#fail((error as Error).message)
    }
  }

  /** A verification flow: its profile and what the request asks for (text only, never HTML). */
  #showRequest(flow: FlowCreated) {
    if (flow.kind !== 'verification' || (flow.profile !== 'pe' && flow.profile !== 'dcql')) return
    this.setAttribute('profile', flow.profile)
    this.#profile.textContent = `Asks, over ${PROFILE_NAMES[flow.profile]}, for:`
    const items = asRequested(flow.requested).map((requested) => {
      const item = document.createElement('li')
      item.textContent = requestedText(requested)
      return item
    })
    this.#requested.replaceChildren(...items)
    this.#request.hidden = items.length === 0
  }

  /**
   * Shows "Use a wallet on this device" when the flow has a DC API request, `dc-api` is not `off`, the flow
   * is not final, and the browser passes the feature test the W3C Digital Credentials API and Chrome
   * recommend (`navigator.credentials.get` is a function and `DigitalCredential` exists; it exists in secure
   * contexts only), does not refuse the protocol (`DigitalCredential.userAgentAllowsProtocol`, where it
   * exists), and the page's origin is one the verifier expects.
   */
  #offerDcApi() {
    let offered = false
    if (this.#dcApi && this.dcApiMode === 'auto' && !isFinal(this.#state)) {
      const dc = (globalThis as { DigitalCredential?: { userAgentAllowsProtocol?: unknown } })
        .DigitalCredential
      const allows = dc?.userAgentAllowsProtocol
      offered = dcApiUsable(this.#dcApi, {
        available: typeof navigator.credentials?.get === 'function' && 'DigitalCredential' in window,
        ...(typeof allows === 'function'
          ? { allowsProtocol: (protocol: string) => Boolean(allows.call(dc, protocol)) }
          : {}),
        origin: location.origin,
      })
    }
    this.#dcApiButton.hidden = !offered
    this.toggleAttribute('dc-api-offered', offered)
    if (!offered) this.#showDcApiStatus(undefined)
    this.#showStatus()
  }

  /** The status text of a live state (waiting, scanned), which the DC API's use changes. */
  #showStatus() {
    this.#qr.classList.toggle('unanswered', this.#dcApiUnanswered)
    if (this.#state !== 'waiting' && this.#state !== 'scanned') return
    this.#status.textContent = statusText(this.#state, this.kind, undefined, {
      offered: this.dcApiOffered,
      unanswered: this.#dcApiUnanswered,
    })
  }

  #showDcApiStatus(message: string | undefined) {
    this.#dcApiStatus.textContent = message ?? ''
    this.#dcApiStatus.hidden = message === undefined
  }

  /**
   * The button's click: the request entry from the backend (which the service counts as the wallet's
   * fetch: the page shows `scanned`), `navigator.credentials.get` with it, the answer posted to the backend.
   * The flow's own state (socket or polling) then says verified or rejected. A refusal of the browser or of
   * the backend is shown in `dc-api-status`; the QR code stays.
   */
  async #useDcApi() {
    const flow = this.#flow
    const offer = this.#dcApi
    if (!flow || !offer || this.#dcApiCall || isFinal(this.#state)) return
    const generation = this.#generation
    const controller = new AbortController()
    this.#dcApiCall = controller
    this.#dcApiButton.disabled = true
    this.#dcApiUnanswered = false
    this.#showStatus()
    const base = `${this.api}/verification/${encodeURIComponent(flow.id)}/dc-api`
    const event = (detail: Omit<DcApiDetail, 'flowId' | 'protocol'>) =>
      this.dispatchEvent(
        new CustomEvent<DcApiDetail>('vc-flow-dc-api', {
          detail: { flowId: flow.id, protocol: offer.protocol, ...detail },
          bubbles: true,
          composed: true,
        }),
      )
    const stopped = () => generation !== this.#generation
    // Once the answer is being posted, its events go out even if the flow stopped meanwhile (the answer's
    // own verified or rejected often arrives over the socket before the POST's response); before, a stopped
    // flow (refreshed, removed, final) ends the call silently.
    let posting = false
    const failed = (phase: 'cancelled' | 'failed', reason: string, message: string) => {
      if (!stopped()) {
        this.#showDcApiStatus(message)
        this.#dcApiUnanswered = true
        this.#showStatus()
      }
      if (!stopped() || posting) event({ phase, reason, message })
    }
    try {
      this.#showDcApiStatus('Asking a wallet on this device…')
      const requested = await fetch(base, {
        headers: { accept: 'application/json' },
        credentials: 'same-origin',
        cache: 'no-store',
        signal: controller.signal,
      })
      const entryBody: unknown = await requested.json().catch(() => undefined)
      if (stopped()) return
      if (!requested.ok) {
        const { code, detail } = problemOf(entryBody)
        failed(
          'failed',
          code ?? `HTTP ${requested.status}`,
          `The request could not be prepared${detail ? `: ${detail}` : ''}. Scan the QR code instead.`,
        )
        return
      }
      const entry = asDcApiMessage(entryBody, offer.protocol)
      if (!entry) {
        failed('failed', 'invalid_entry', 'The backend sent no usable request. Scan the QR code instead.')
        return
      }
      event({ phase: 'asking' })
      let credential: unknown
      try {
        credential = await navigator.credentials.get({
          digital: { requests: [entry] },
          mediation: 'required',
          signal: controller.signal,
        } as CredentialRequestOptions)
      } catch (error) {
        const name = (error as { name?: unknown })?.name
        const reason = typeof name === 'string' ? name : 'Error'
        if (reason === 'NotAllowedError' || reason === 'AbortError') {
          failed(
            'cancelled',
            reason,
            'No wallet on this device answered (cancelled). Try again, or scan the QR code.',
          )
        } else {
          failed(
            'failed',
            reason,
            `This browser could not ask a wallet (${reason}). Scan the QR code instead.`,
          )
        }
        return
      }
      if (stopped()) return
      if (credential === null || credential === undefined) {
        failed('cancelled', 'null', 'No wallet on this device answered. Try again, or scan the QR code.')
        return
      }
      const answer = asDcApiMessage(credential)
      if (!answer) {
        failed('failed', 'invalid_answer', 'The wallet gave no usable answer. Scan the QR code instead.')
        return
      }
      this.#showDcApiStatus('Your wallet answered: checking…')
      posting = true
      // Not aborted when the flow stops: the wallet's answer is delivered whatever the page does meanwhile.
      const posted = await fetch(base, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ protocol: answer.protocol, data: answer.data }),
        credentials: 'same-origin',
        cache: 'no-store',
      })
      const postedBody: unknown = await posted.json().catch(() => undefined)
      if (!posted.ok) {
        const { code, detail } = problemOf(postedBody)
        failed(
          'failed',
          code ?? `HTTP ${posted.status}`,
          `The answer was not taken${detail ? `: ${detail}` : ''}. Try again, or scan the QR code.`,
        )
        return
      }
      // verified or rejected: the flow's state (socket or polling) brings it, with its outcome.
      if (!stopped()) this.#showDcApiStatus('Your wallet answered.')
      event({ phase: 'sent' })
    } catch (error) {
      // The backend cannot be reached, or the flow was stopped (its fetches aborted).
      failed(
        'failed',
        (error as { name?: string })?.name ?? 'Error',
        'The backend cannot be reached. Scan the QR code instead.',
      )
    } finally {
      if (this.#dcApiCall === controller) {
        this.#dcApiCall = undefined
        this.#dcApiButton.disabled = false
      }
    }
  }

  /** Copies the deep link: the Clipboard API, else the selected text; the button says what happened. */
  async #copyLink() {
    const link = this.#flow?.link
    if (!link) return
    let copied = false
    try {
      await navigator.clipboard.writeText(link)
      copied = true
    } catch {
      // No Clipboard API (a page over plain HTTP on another host than localhost) or no permission.
      this.#linkText.focus()
      this.#linkText.select()
      try {
        copied = document.execCommand('copy')
      } catch {}
    }
    this.#copy.textContent = copied ? 'Copied' : 'Press Ctrl+C'
    clearTimeout(this.#copyReset)
    this.#copyReset = setTimeout(() => {
      this.#copy.textContent = 'Copy'
    }, 2000)
  }

  /**
   * A finished verification's outcome, as the backend read it (4.7): the failed checks of a rejected
   * presentation, the shared claims of a verified one. Text only (textContent), never HTML.
   */
  #showOutcome(status: FlowStatus | undefined) {
    const outcome = status?.outcome
    const checks = outcome?.failedChecks ?? []
    const shared = outcome?.shared ?? []
    this.#failedChecks.replaceChildren(
      ...checks.map(({ check, message }) => {
        const item = document.createElement('li')
        const name = document.createElement('span')
        name.setAttribute('part', 'check')
        name.textContent = check
        item.append(name, `: ${message}`)
        return item
      }),
    )
    this.#shared.replaceChildren(
      ...shared.flatMap((credential) => {
        const heading = document.createElement('p')
        heading.setAttribute('part', 'credential')
        heading.textContent = credential.issuer
          ? `${credential.type}, issued by ${credential.issuer}`
          : credential.type
        const claims = document.createElement('ul')
        claims.setAttribute('part', 'claims')
        claims.append(
          ...credential.claims.map(({ path, value }) => {
            const item = document.createElement('li')
            item.textContent = `${path}: ${value}`
            return item
          }),
        )
        return [heading, claims]
      }),
    )
    this.#failedChecks.hidden = checks.length === 0
    this.#shared.hidden = shared.length === 0
    this.#outcomeTitle.textContent =
      checks.length > 0
        ? `${checks.length === 1 ? 'This check' : `These ${checks.length} checks`} failed:`
        : 'Your wallet shared:'
    this.#outcome.hidden = checks.length === 0 && shared.length === 0
  }

  #follow(generation: number) {
    if (this.transport === 'polling') this.#poll(generation)
    else this.#openSocket(generation, this.transport === 'auto')
  }

  #openSocket(generation: number, fallback: boolean) {
    const flow = this.#flow as FlowCreated
    const url = new URL(`${this.api}/${flow.kind}/${encodeURIComponent(flow.id)}/socket`, location.href)
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:'
    const givenUp = () => {
      if (generation !== this.#generation || isFinal(this.#state)) return
      this.#socket = undefined
      if (fallback) this.#poll(generation)
      else this.#fail('the live connection was lost')
    }
    let socket: WebSocket
    try {
      socket = new WebSocket(url)
    } catch {
      givenUp()
      return
    }
    this.#socket = socket
    const openTimer = setTimeout(() => {
      if (socket.readyState === WebSocket.CONNECTING) socket.close()
    }, SOCKET_OPEN_TIMEOUT_MS)
    socket.addEventListener('open', () => clearTimeout(openTimer))
    socket.addEventListener('message', (event) => {
      if (generation !== this.#generation || typeof event.data !== 'string') return
      let message: unknown
      try {
        message = JSON.parse(event.data)
      } catch {
        return
      }
      if (typeof message !== 'object' || message === null) return
      if ((message as { type?: unknown }).type !== 'state') return
      // The first message is the stream's snapshot: from then on no change of the flow can be missed.
      if (this.#transport !== 'websocket') {
        this.#transport = 'websocket'
        this.setAttribute('active-transport', 'websocket')
      }
      this.#apply(generation, asFlowStatus(message))
    })
    // A socket that fails to open, or closes before a final state (server restart, proxy, blocked): fall back.
    socket.addEventListener('close', () => {
      clearTimeout(openTimer)
      givenUp()
    })
  }

  #poll(generation: number) {
    const flow = this.#flow as FlowCreated
    this.#transport = 'polling'
    this.setAttribute('active-transport', 'polling')
    const interval = this.pollInterval
    let delay = interval
    const controller = new AbortController()
    this.#fetches = controller
    const tick = async () => {
      if (generation !== this.#generation) return
      try {
        const response = await fetch(`${this.api}/${flow.kind}/${encodeURIComponent(flow.id)}`, {
          headers: { accept: 'application/json' },
          credentials: 'same-origin',
          cache: 'no-store',
          signal: controller.signal,
        })
        if (response.status === 404) {
          if (generation === this.#generation) this.#fail('the backend no longer knows this flow')
          return
        }
        if (!response.ok) throw new Error(`HTTP ${response.status}`)
        this.#apply(generation, asFlowStatus(await response.json()))
        delay = interval
      } catch {
        // Network trouble or a 5xx: keep trying, less often.
        delay = Math.min(delay * 2, MAX_POLL_BACKOFF_MS)
      }
      if (generation === this.#generation && !isFinal(this.#state)) {
        this.#pollTimer = setTimeout(tick, delay)
      }
    }
    void tick()
  }

  #apply(generation: number, status: FlowStatus | undefined) {
    if (!status || generation !== this.#generation || isFinal(this.#state)) return
    if (status.id !== this.#flow?.id || status.kind !== this.#flow.kind) return
    const next = pageState(status.status, status.step, this.#state)
    if (next === 'verified' || next === 'rejected') this.#showOutcome(status)
    if (next !== this.#state) this.#setState(next, status)
    if (isFinal(next)) this.#stop()
  }

  #fail(message: string) {
    this.#stop()
    this.#setState('error', undefined, message)
  }

  /** Closes the socket, stops polling, abandons fetches; callbacks still running see a new generation. */
  #stop() {
    this.#generation++
    clearTimeout(this.#pollTimer)
    this.#pollTimer = undefined
    this.#fetches?.abort()
    this.#fetches = undefined
    // Closes the browser's wallet selection if it is open (get() rejects with AbortError).
    this.#dcApiCall?.abort()
    this.#dcApiCall = undefined
    this.#dcApiButton.disabled = false
    const socket = this.#socket
    this.#socket = undefined
    if (socket && socket.readyState <= WebSocket.OPEN) socket.close(1000)
  }

  #setState(state: PageState, cause: FlowStatus | undefined, message?: string) {
    const previous = this.#state
    this.#state = state
    this.setAttribute('state', state)
    if (isFinal(state)) this.#offerDcApi()
    this.#status.textContent = statusText(state, this.kind, message, {
      offered: this.dcApiOffered,
      unanswered: this.#dcApiUnanswered,
    })
    this.#refresh.hidden = !isFinal(state)
    const detail: FlowStateDetail = {
      state,
      previous,
      kind: this.kind,
      flowId: this.#flow?.id,
      link: this.#flow?.link,
      status: cause?.status,
      step: cause?.step,
      at: cause?.at || undefined,
      transport: this.#transport,
      ...(message !== undefined ? { message } : {}),
      ...(cause?.outcome ? { outcome: cause.outcome } : {}),
    }
    this.dispatchEvent(new CustomEvent('vc-flow-state', { detail, bubbles: true, composed: true }))
  }
}

/** The `code` and `detail` of a demo backend's problem body, when it has them. */
function problemOf(body: unknown): { code?: string; detail?: string } {
  if (typeof body !== 'object' || body === null) return {}
  const { code, detail } = body as { code?: unknown; detail?: unknown }
  return {
    ...(typeof code === 'string' ? { code: pageText(code) } : {}),
    ...(typeof detail === 'string' ? { detail: pageText(detail) } : {}),
  }
}

if (!customElements.get('vc-flow-qr')) customElements.define('vc-flow-qr', VcFlowQr)

declare global {
  interface HTMLElementTagNameMap {
    'vc-flow-qr': VcFlowQr
  }
  interface HTMLElementEventMap {
    'vc-flow-state': CustomEvent<FlowStateDetail>
    'vc-flow-dc-api': CustomEvent<DcApiDetail>
  }
}
