// A wallet test plan driven by a person with a phone (`vc-harness serve --sandbox --wallet-plan NAME`): each
// case's QR code in the terminal and on the page at /wallet-test, what the wallet did as it happens, the
// verdict of each case. Enter in the terminal, or "Next case" on the page, ends a case early (the wallet
// shows an error and will send nothing).

import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import QRCode from 'qrcode'
import { PLAN_TITLES, planCases } from './plans.ts'
import type { LiveState, WalletDriver } from './runner.ts'

/** The terminal side: prints each case's QR code and waits until the case ends. */
export function interactiveDriver(print: (text: string) => void, input?: NodeJS.ReadStream): WalletDriver {
  return {
    describe: 'a wallet driven by hand (serve --sandbox --wallet-plan)',
    interactive: true,
    async open(ctx) {
      const qr = await QRCode.toString(ctx.link, { type: 'terminal', small: true })
      const c = ctx.testCase
      print('')
      print(`=== Case ${ctx.index}/${ctx.total}: ${c.title} ===`)
      print(`${c.id}${c.fault ? ` — the service breaks a rule on purpose: ${c.rule}` : ' — a valid flow'}`)
      print(`What passes: ${c.passes}`)
      print('Scan the QR code with the wallet, or open the deep link on the phone:')
      print(ctx.link)
      print(qr)
      print(
        'Press Enter when the wallet shows an error and will send nothing (or wait for the window to close).',
      )
      await new Promise<void>((resolve) => {
        const onLine = () => resolve()
        input?.once('data', onLine)
        ctx.signal.addEventListener(
          'abort',
          () => {
            input?.off('data', onLine)
            resolve()
          },
          { once: true },
        )
      })
      return {}
    },
  }
}

// The page's script. Every URL is built from the page's own path, so the page works at /wallet-test and at
// /wallet-test/ alike (a relative `fetch('state')` from /wallet-test is /state, which does not exist), and
// behind a proxy that serves it under a longer path. It long-polls the state (`?seen=` answers once something
// changed), so a verdict, the next case's QR code and the end of the run appear by themselves at once.
const SCRIPT = `
const $ = (id) => document.getElementById(id)
const base = location.pathname.replace(/\\/+$/, '') + '/'
let seen = ''
let shownLink = ''
let deadline = 0
let wasLive = false
function status(text, cls) {
  $('status').textContent = text
  $('status').className = cls
}
function resetNext() {
  $('next').disabled = false
  $('next').textContent = 'Next case: the wallet refused and will send nothing'
}
$('next').addEventListener('click', async () => {
  $('next').disabled = true
  $('next').textContent = 'Ending this case…'
  try {
    const answer = await fetch(base + 'next', { method: 'POST' })
    if (!answer.ok) throw new Error('HTTP ' + answer.status)
  } catch {
    resetNext()
  }
})
function tick() {
  if (!deadline) return
  const left = Math.max(0, Math.round((deadline - performance.now()) / 1000))
  $('remaining').textContent = left + ' s left in this case'
}
setInterval(tick, 1000)
function row(r) {
  const tr = document.createElement('tr')
  tr.dataset.case = r.id
  tr.className = r.pass ? 'pass' : 'fail'
  for (const [text, cls] of [[String(r.index)], [r.title + ' (' + r.id + ')'], [r.pass ? 'PASS' : 'FAIL', 'verdict'], [r.reason]]) {
    const td = document.createElement('td')
    td.textContent = text
    if (cls) td.className = cls
    tr.append(td)
  }
  return tr
}
function render(s) {
  $('plan').textContent = 'Plan ' + s.plan + (s.planTitle ? ': ' + s.planTitle : '') + ' · ' + s.total + ' cases'
  const c = s.current
  $('current').hidden = !c
  if (c) {
    document.title = 'Case ' + c.index + '/' + c.total + ' · vc-harness wallet test'
    $('step').textContent = 'Case ' + c.index + ' of ' + c.total + ' · ' + c.id
    $('title').textContent = c.title
    $('fault').textContent = c.fault
      ? 'The service breaks a rule on purpose (' + c.fault + '): ' + c.rule + '. A safe wallet refuses.'
      : 'A valid flow: nothing is broken on purpose. A good wallet completes it.'
    $('fault').className = c.fault ? 'negative' : 'positive'
    $('passes').textContent = c.passes
    if (shownLink !== c.link) {
      $('qr').innerHTML = c.qr
      $('link').textContent = c.link
      $('open').href = c.link
      shownLink = c.link
      resetNext()
    }
    deadline = performance.now() + c.remainingMs
    tick()
  }
  $('done').hidden = !s.finished
  if (s.finished) {
    document.title = 'Finished · vc-harness wallet test'
    const judged = s.results.length
    $('verdict').textContent = judged === 0
      ? 'No case was judged'
      : s.passed
        ? 'The wallet behaved correctly in every case' + (s.interrupted ? ' judged' : '')
        : 'The wallet did NOT behave correctly in every case' + (s.interrupted ? ' judged' : '')
    $('verdict').className = s.passed ? 'pass' : 'fail'
    $('summary').textContent = (s.interrupted ? 'Stopped by hand after ' + judged + ' of ' + s.total + ' cases. ' : '') +
      s.results.filter((r) => r.pass).length + ' pass, ' + s.results.filter((r) => !r.pass).length +
      ' fail. The reports are in the folder the terminal names.'
  }
  $('count').textContent = s.results.length + ' of ' + s.total
  $('results').replaceChildren(...s.results.map(row))
}
async function poll() {
  for (let failures = 0; ; ) {
    try {
      const answer = await fetch(base + 'state' + (seen ? '?seen=' + encodeURIComponent(seen) : ''), { cache: 'no-store' })
      if (!answer.ok) throw new Error('HTTP ' + answer.status)
      const s = await answer.json()
      failures = 0
      wasLive = true
      seen = s.version
      render(s)
      if (s.finished) {
        status('The run is over.', 'finished')
        return
      }
      status('Live: this page follows the run by itself.', 'live')
    } catch (error) {
      failures++
      status(wasLive
        ? 'The service is not reachable: the run may be over (the terminal names the reports), or the network dropped. Retrying…'
        : 'Cannot reach the service (' + error.message + '). Retrying…', 'offline')
      await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 500 * failures)))
    }
  }
}
poll()
`

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>vc-harness wallet test</title>
<style>
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f4f6fa;color:#1b1f24}
main{max-width:60rem;margin:0 auto;padding:1.5rem 1rem}
h1{font-size:1.4rem;margin:0}
h2{font-size:1.2rem;margin:.2rem 0 .6rem}
.card{background:#fff;border:1px solid #d8dde6;border-radius:.6rem;padding:1rem 1.2rem;margin:1rem 0}
.grid{display:flex;flex-wrap:wrap;gap:1.2rem;align-items:flex-start}
#qr{flex:0 0 auto;background:#fff;line-height:0}
#qr svg{width:min(22rem,86vw);height:auto}
.info{flex:1 1 18rem;min-width:0}
#step,#plan{color:#5a6270;margin:0}
#status{font-size:.9rem;margin:.3rem 0 0}
#status.live::before{content:"● ";color:#1a7f37}
#status.offline::before{content:"● ";color:#cf222e}
.negative{color:#9a3412}.positive{color:#1a7f37}
code{word-break:break-all;font-size:.85rem;background:#f1f3f6;padding:.1rem .25rem;border-radius:.25rem}
a.button,button{display:inline-block;font:inherit;padding:.45rem .9rem;border-radius:.4rem;border:1px solid #0b57d0;text-decoration:none;cursor:pointer}
a.button{background:#0b57d0;color:#fff}
button{background:#fff;color:#0b57d0}
button:disabled{color:#888;border-color:#bbb;cursor:default}
#remaining{font-weight:600}
.pass .verdict,#verdict.pass{color:#1a7f37;font-weight:600}
.fail .verdict,#verdict.fail{color:#cf222e;font-weight:600}
table{border-collapse:collapse;width:100%;background:#fff}
td,th{border-bottom:1px solid #e1e5eb;padding:.35rem .5rem;text-align:left;vertical-align:top}
</style></head><body><main>
<h1>vc-harness wallet test</h1>
<p id="plan">Starting…</p>
<p id="status">Connecting to the service…</p>
<section id="current" class="card" hidden>
<p id="step"></p>
<h2 id="title"></h2>
<div class="grid">
<div id="qr" role="img" aria-label="QR code of the deep link"></div>
<div class="info">
<p id="fault"></p>
<p><strong>What passes:</strong> <span id="passes"></span></p>
<p>Scan the QR code with the wallet, or <a id="open" class="button" href="#">open the deep link on this device</a></p>
<p>Deep link: <code id="link"></code></p>
<p id="remaining"></p>
<p><button id="next" type="button">Next case: the wallet refused and will send nothing</button></p>
</div></div>
</section>
<section id="done" class="card" hidden><h2 id="verdict"></h2><p id="summary"></p></section>
<h2>Verdicts <small id="count"></small></h2>
<table><thead><tr><th>#</th><th>Case</th><th>Result</th><th>Reason</th></tr></thead><tbody id="results"></tbody></table>
</main>
<script type="module">${SCRIPT}</script></body></html>`

/** Content-Security-Policy of the page: only its own inline script (by hash), connections to this origin. */
const PAGE_CSP = [
  "default-src 'none'",
  `script-src 'sha256-${createHash('sha256').update(SCRIPT).digest('base64')}'`,
  "style-src 'unsafe-inline'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

/** How long a `?seen=` request waits for a change before it answers anyway. */
const LONG_POLL_MS = 20_000
/** How often a waiting request looks at the run's state (the runner changes it in place, without events). */
const CHECK_MS = 100

/** What has to change for a page to redraw: the live case, the verdicts, the end. */
const versionOf = (s: LiveState) => `${s.current?.id ?? ''}|${s.results.length}|${s.finished}`

/**
 * The page at /wallet-test (and /wallet-test/): the current case's QR code and deep link, what passes, the
 * time left, "Next case", and the verdicts so far. GET /wallet-test/state answers at once, or with `?seen=`
 * (the version the page shows) once something changed: a request waiting when the run ends gets the final
 * state, because closing the service waits for requests in flight.
 */
export function walletTestPage(app: FastifyInstance, state: () => LiveState) {
  const page = async (_request: unknown, reply: import('fastify').FastifyReply) =>
    reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', PAGE_CSP)
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-store')
      .send(PAGE)
  app.get('/wallet-test', page)
  app.get('/wallet-test/', page)
  const qrCodes = new Map<string, Promise<string>>()
  // Quiet zone of 4 modules, as ISO/IEC 18004 asks: phones read a code on a screen more reliably with it.
  const qrOf = (link: string) => {
    let qr = qrCodes.get(link)
    if (!qr) {
      qr = QRCode.toString(link, { type: 'svg', margin: 4 })
      qrCodes.set(link, qr)
    }
    return qr
  }
  app.get<{ Querystring: { seen?: string } }>('/wallet-test/state', async (request, reply) => {
    const seen = request.query.seen
    if (seen !== undefined) {
      // The page disconnecting ends the wait too.
      const gone = new AbortController()
      reply.raw.once('close', () => gone.abort())
      const until = Date.now() + LONG_POLL_MS
      while (versionOf(state()) === seen && Date.now() < until && !gone.signal.aborted) {
        await sleep(CHECK_MS, undefined, { signal: gone.signal }).catch(() => {})
      }
    }
    const s = state()
    const c = s.current
    const testCase = c && planCases(s.plan).find((x) => x.id === c.id)
    reply.header('cache-control', 'no-store')
    // The run closes the service once it is over; a page's connection kept alive past this last answer
    // would hold that close up for the keep-alive timeout (72 s by default).
    if (s.finished) reply.header('connection', 'close')
    return {
      version: versionOf(s),
      plan: s.plan,
      ...(s.plan === 'all' ? {} : { planTitle: PLAN_TITLES[s.plan] }),
      total: s.total,
      finished: s.finished,
      passed: s.finished && s.results.length > 0 && s.results.every((r) => r.verdict.pass),
      interrupted: s.finished && s.results.length < s.total,
      ...(c
        ? {
            current: {
              ...c,
              ...(testCase?.fault ? { fault: testCase.fault, rule: testCase.rule } : {}),
              qr: await qrOf(c.link),
              remainingMs: Math.max(0, c.startedAt + c.windowMs - Date.now()),
            },
          }
        : {}),
      results: s.results.map((r, i) => ({
        index: i + 1,
        id: r.id,
        title: r.title,
        pass: r.verdict.pass,
        outcome: r.verdict.outcome,
        reason: r.verdict.reason,
      })),
    }
  })
  app.post('/wallet-test/next', async (_request, reply) => {
    state().next()
    return reply.code(204).send()
  })
}
