// The demo relying party's pages: plain HTML around <vc-flow-qr>. No key, token or secret is ever written
// into them; everything dynamic is escaped.

import type { SandboxPlan } from '../harness/sandbox.ts'
import { type FlowKind, PROFILE_NAMES } from '../web/flow-state.ts'

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  )

/** Content-Security-Policy of the pages: scripts only from this origin, connections only to it. */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

const STYLE = `
  body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; background: #f4f6fa; color: #1b1f24; }
  main { max-width: 40rem; margin: 0 auto; padding: 2rem 1rem; display: flex; flex-direction: column; align-items: center; gap: 1rem; }
  h1 { font-size: 1.5rem; margin: 0; text-align: center; }
  p { margin: 0; text-align: center; }
  nav { display: flex; gap: 1rem; }
  small { color: #5a6270; }
`

export interface PageContext {
  /** Where the demo is mounted, e.g. /demo. */
  prefix: string
  plan: SandboxPlan
  /** Content hash of the component bundle (its URL's `v`). */
  assetHash: string
}

function layout(context: PageContext, title: string, body: string): string {
  const { prefix, assetHash } = context
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)} · vc-harness demo</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
<script type="module" src="${escapeHtml(`${prefix}/assets/vc-flow-qr.js?v=${assetHash}`)}"></script>
</head>
<body>
<main>
${body}
<nav><a href="${escapeHtml(`${prefix}/issue`)}">Issue a credential</a><a href="${escapeHtml(`${prefix}/verify`)}">Verify a credential</a></nav>
<small>vc-harness demo relying party: the page talks only to its backend, which holds the API keys.</small>
</main>
</body>
</html>
`
}

/** /demo/issue and /demo/verify. `transport` comes from the page's query (already validated). */
export function flowPage(context: PageContext, kind: FlowKind, transport: string | undefined): string {
  const plan = kind === 'issuance' ? context.plan.issuance : context.plan.verification
  const types = plan.credentialTypes.join(', ')
  const heading = kind === 'issuance' ? `Get your ${types}` : `Prove you hold a ${types}`
  const intro =
    kind === 'issuance'
      ? `Scan the code with your wallet to receive a sample ${types} (template "${plan.template}", tenant "${plan.tenant}").`
      : `Scan the code with your wallet to present a ${types} (template "${plan.template}", tenant "${plan.tenant}", ${PROFILE_NAMES[plan.profile ?? 'pe']}).`
  const done =
    kind === 'issuance' ? 'Next: present it on the verification page.' : 'Thank you: access granted.'
  const attributes = [
    `kind="${kind}"`,
    `api="${escapeHtml(`${context.prefix}/api`)}"`,
    `transport="${escapeHtml(transport ?? 'auto')}"`,
  ].join(' ')
  return layout(
    context,
    heading,
    `<h1>${escapeHtml(heading)}</h1>
<p>${escapeHtml(intro)}</p>
<vc-flow-qr ${attributes}>
  <p slot="done">${escapeHtml(done)}</p>
</vc-flow-qr>
<noscript>This page needs JavaScript to show the QR code.</noscript>`,
  )
}

/** /demo: what the demo offers. */
export function indexPage(context: PageContext): string {
  const { issuance, verification } = context.plan
  return layout(
    context,
    'Demo relying party',
    `<h1>vc-harness demo relying party</h1>
<p>Issuance: ${escapeHtml(issuance.credentialTypes.join(', '))} (template "${escapeHtml(issuance.template)}").
Verification: asks for ${escapeHtml(verification.credentialTypes.join(', '))} (template "${escapeHtml(verification.template)}", ${escapeHtml(PROFILE_NAMES[verification.profile ?? 'pe'])}).</p>`,
  )
}
