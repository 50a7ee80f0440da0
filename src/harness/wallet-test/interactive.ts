// A wallet test plan driven by a person with a phone (`vc-harness serve --sandbox --wallet-plan NAME`): each
// case's QR code in the terminal and on the page at /wallet-test, what the wallet did as it happens, the
// verdict of each case. Enter in the terminal, or "Next case" on the page, ends a case early (the wallet
// shows an error and will send nothing).

import type { FastifyInstance } from 'fastify'
import QRCode from 'qrcode'
import { PLAN_TITLES } from './plans.ts'
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

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>vc-harness wallet test</title>
<style>
body{font-family:system-ui,sans-serif;margin:2rem;max-width:56rem}
#qr svg{width:18rem;height:18rem}
.pass{color:#1a7f37}.fail{color:#cf222e}
code{word-break:break-all}
table{border-collapse:collapse}td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
</style></head><body>
<h1>vc-harness wallet test</h1>
<p id="plan"></p>
<section id="current"><h2 id="title">Starting…</h2><p id="rule"></p><div id="qr"></div>
<p><a id="link" href="#">open the deep link on this device</a></p>
<p id="remaining"></p><button id="next" type="button">Next case: the wallet refused and will send nothing</button></section>
<h2>Results</h2><table><thead><tr><th>Case</th><th>Result</th><th>Reason</th></tr></thead><tbody id="results"></tbody></table>
<script type="module">
const $ = (id) => document.getElementById(id)
let shown = ''
$('next').onclick = () => fetch('next', { method: 'POST' })
async function refresh() {
  const state = await (await fetch('state', { cache: 'no-store' })).json()
  $('plan').textContent = state.plan
  if (state.current) {
    const c = state.current
    $('title').textContent = 'Case ' + c.index + '/' + c.total + ': ' + c.title
    $('rule').textContent = c.passes
    if (shown !== c.link) { $('qr').innerHTML = c.qr; shown = c.link }
    $('link').href = c.link
    $('remaining').textContent = Math.max(0, Math.round((c.startedAt + c.windowMs - Date.now()) / 1000)) + ' s left'
  } else if (state.finished) {
    $('current').innerHTML = '<h2>' + (state.passed ? 'The wallet behaved correctly in every case' : 'The wallet did NOT behave correctly in every case') + '</h2>'
  }
  const rows = state.results.map((r) => {
    const tr = document.createElement('tr')
    for (const [text, cls] of [[r.title + ' (' + r.id + ')'], [r.pass ? 'PASS' : 'FAIL', r.pass ? 'pass' : 'fail'], [r.reason]]) {
      const td = document.createElement('td'); td.textContent = text; if (cls) td.className = cls; tr.append(td)
    }
    return tr
  })
  $('results').replaceChildren(...rows)
  if (!state.finished || state.current) setTimeout(refresh, 1000)
}
refresh()
</script></body></html>`

/** The page at /wallet-test: the current case's QR code and the verdicts so far. */
export function walletTestPage(app: FastifyInstance, state: () => LiveState) {
  app.get('/wallet-test', async (_request, reply) => reply.type('text/html; charset=utf-8').send(PAGE))
  app.get('/wallet-test/state', async (_request, reply) => {
    const s = state()
    const current = s.current && {
      ...s.current,
      qr: await QRCode.toString(s.current.link, { type: 'svg', margin: 1 }),
    }
    reply.header('cache-control', 'no-store')
    return {
      plan: `${s.plan}${s.plan === 'all' ? '' : `: ${PLAN_TITLES[s.plan]}`}`,
      finished: s.finished,
      passed: s.finished && s.results.every((r) => r.verdict.pass),
      ...(current ? { current } : {}),
      results: s.results.map((r) => ({
        id: r.id,
        title: r.title,
        pass: r.verdict.pass,
        reason: r.verdict.reason,
      })),
    }
  })
  app.post('/wallet-test/next', async (_request, reply) => {
    state().next()
    return reply.code(204).send()
  })
}
