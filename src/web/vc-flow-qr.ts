// <vc-flow-qr>: a relying party's QR page component. It asks the relying party's backend (never the service:
// it holds no API key) for a credential offer or a verification session, renders the deep link as a QR code
// and as a same-device link, and follows the flow over a WebSocket, polling when the socket cannot be used.
// Bundled by esbuild at serve start (src/demo/assets.ts); docs/qr-page.md documents its API.
//
//   <vc-flow-qr kind="issuance|verification" api="/demo/api" transport="auto|websocket|polling"
//               poll-interval="1500"></vc-flow-qr>
//
// Attribute `state` (loading, waiting, scanned, issued, verified, rejected, expired, error) and a
// `vc-flow-state` event on each change; attribute `profile` (pe, dcql) on a verification flow; slots title,
// waiting, scanned, done, rejected, expired, error; parts container, title, qr, deep-link, link-copy, link-text,
// copy, tx-code, request, profile, requested, status, outcome, outcome-title, failed-checks, check, shared,
// credential, claims, refresh.

import QRCode from 'qrcode'
import {
  asFlowStatus,
  asRequested,
  type FlowCreated,
  type FlowKind,
  type FlowOutcome,
  type FlowStatus,
  isFinal,
  isSafeDeepLink,
  type PageState,
  PROFILE_NAMES,
  pageState,
  requestedText,
} from './flow-state.ts'

export type Transport = 'auto' | 'websocket' | 'polling'

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
[hidden] { display: none !important; }
`

const MARKUP = `
<div part="container">
  <slot name="title"><h2 part="title"></h2></slot>
  <div class="live">
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

function statusText(state: PageState, kind: FlowKind, message?: string): string {
  const issuance = kind === 'issuance'
  switch (state) {
    case 'loading':
      return issuance ? 'Preparing your credential offer…' : 'Preparing the verification request…'
    case 'waiting':
      return issuance
        ? 'Scan the QR code with your wallet, or open the link on this device.'
        : 'Scan the QR code with your wallet to share your credential, or open the link on this device.'
    case 'scanned':
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
  static readonly observedAttributes = ['kind', 'api', 'transport']

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

  attributeChangedCallback(_name: string, old: string | null, value: string | null) {
    if (old !== value && this.#started && this.isConnected) void this.refresh()
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
    const socket = this.#socket
    this.#socket = undefined
    if (socket && socket.readyState <= WebSocket.OPEN) socket.close(1000)
  }

  #setState(state: PageState, cause: FlowStatus | undefined, message?: string) {
    const previous = this.#state
    this.#state = state
    this.setAttribute('state', state)
    this.#status.textContent = statusText(state, this.kind, message)
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

if (!customElements.get('vc-flow-qr')) customElements.define('vc-flow-qr', VcFlowQr)

declare global {
  interface HTMLElementTagNameMap {
    'vc-flow-qr': VcFlowQr
  }
  interface HTMLElementEventMap {
    'vc-flow-state': CustomEvent<FlowStateDetail>
  }
}
