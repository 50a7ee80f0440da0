/**
 * What the HAIP authorization code flow costs the issuer next to the pre-authorized code flow, measured in
 * the same run: server CPU per issuance (the service's own process: process.cpuUsage over IPC, user + system,
 * every thread) and wall time per issuance, for
 *   - pre-authorized: offer (4.2) + submit (4.4) + token (Bearer) + nonce + credential — today's flow;
 *   - pre-authorized + DPoP: the same with a DPoP-bound token (HAIP allows it on this flow);
 *   - authorization code: offer + submit + PAR (wallet attestation) + authorize (auto user step) + token
 *     (DPoP with the server nonce, attestation) + nonce + credential (DPoP, ath).
 * Rounds interleave the three kinds so machine noise falls on all of them; ratios are to the pre-authorized
 * row of the same run. Asserts nothing, but exits 1 if an issuance fails.
 *
 *   node --import tsx bench/authorization-code.ts [--smoke] [--flows N] [--rounds R]
 *
 * The service runs in a child process on 127.0.0.1 with a file database in a temporary directory (durable
 * writes as a deployment makes them); the wallet side (key proofs, DPoP proofs, attestations) runs here and
 * is not counted. One dc+sd-jwt ES256 template per grant, content submitted before the wallet asks (immediate).
 */
import { type ChildProcess, fork } from 'node:child_process'
import { generateKeyPairSync, type KeyObject } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { ok, RelyingPartyClient } from '../src/client/index.ts'
import { DEMO_CONFIG_PATH, parseConfig } from '../src/service/config/index.ts'
import { startServer } from '../src/service/server.ts'
import { signJws } from '../src/shared/jws.ts'
import {
  createClientAttestation,
  createClientAttestationPop,
} from '../src/shared/oauth/client-attestation.ts'
import { createDpopProof, type DpopSigner } from '../src/shared/oauth/dpop.ts'
import { newPkce } from '../src/shared/oauth/pkce.ts'
import { testWalletProviderSigner } from '../src/shared/oauth/test-wallet-provider.ts'
import { PRE_AUTHORIZED_GRANT } from '../src/shared/wire.ts'

const TENANT = 'demo'
const APP_KEY = {
  id: '4a1b2c3d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
  secret: 'bench-authorization-code-0123456789',
  role: 'app',
}
const CONTENT = [
  {
    type: ['VerifiableCredential', 'VerifiableId'],
    credentialSubject: { familyName: 'Hopper', givenName: 'Grace' },
  },
]
const TEMPLATES = [
  { id: 'bench-pre', credentialType: 'VerifiableId', format: 'dc+sd-jwt', signingAlg: 'ES256' },
  {
    id: 'bench-code',
    credentialType: 'VerifiableId',
    format: 'dc+sd-jwt',
    signingAlg: 'ES256',
    grants: ['authorization_code'],
    authorization: { userStep: 'auto' },
  },
]
const REDIRECT_URI = 'https://wallet.bench.invalid/callback'
const CLIENT_ID = 'bench-wallet'

// ---------------------------------------------------------------------------------------------------
// The service, in a child process: answers `cpu` with its process.cpuUsage().

function startService(): Promise<{ child: ChildProcess; url: string; cpu(): Promise<number> }> {
  const child = fork(fileURLToPath(import.meta.url), ['--serve'], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: ['--import', 'tsx'],
  })
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('message', (message: { url: string }) => {
      const cpu = () =>
        new Promise<number>((done) => {
          child.once('message', (m: { cpu: NodeJS.CpuUsage }) => done((m.cpu.user + m.cpu.system) / 1000))
          child.send('cpu')
        })
      resolve({ child, url: message.url, cpu })
    })
  })
}

// ---------------------------------------------------------------------------------------------------
// The wallet side

const p256 = () => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const { kty, crv, x, y } = publicKey.export({ format: 'jwk' }) as Record<string, string>
  return { privateKey, publicJwk: { kty, crv, x, y } }
}

interface Wallet {
  holder: { privateKey: KeyObject; publicJwk: Record<string, unknown> }
  dpop: DpopSigner
  instance: { privateKey: KeyObject; publicJwk: Record<string, unknown> }
  attestation: string
}
function wallet(): Wallet {
  const instance = p256()
  return {
    holder: p256(),
    dpop: { ...p256(), alg: 'ES256' },
    instance,
    attestation: createClientAttestation(testWalletProviderSigner(), {
      clientId: CLIENT_ID,
      instanceJwk: instance.publicJwk,
    }),
  }
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
async function json(response: Response, what: string): Promise<Record<string, unknown>> {
  const body = (await response.json()) as Record<string, unknown>
  if (!response.ok) throw new Error(`${what}: ${response.status} ${JSON.stringify(body)}`)
  return body
}

class Flows {
  private dpopNonce: string | undefined
  constructor(
    private readonly rp: RelyingPartyClient,
    private readonly appToken: string,
    private readonly issuer: string,
  ) {}

  private async offer(group: string) {
    const body = ok(await this.rp.createOffer(this.appToken, group), 'offer')
    const offerUri = decodeURIComponent(body.credential_offer_uri.split('credential_offer_uri=')[1] ?? '')
    const processId = new URL(offerUri).pathname.split('/').at(-1) as string
    ok(await this.rp.submitCredentials(this.appToken, processId, CONTENT), 'submit')
    return (await json(await fetch(offerUri), 'offer')) as { grants: Record<string, Record<string, string>> }
  }

  private dpopHeader(w: Wallet, htu: string, accessToken?: string) {
    return createDpopProof(w.dpop, {
      htm: 'POST',
      htu,
      ...(this.dpopNonce ? { nonce: this.dpopNonce } : {}),
      ...(accessToken ? { accessToken } : {}),
    })
  }

  /** A request with DPoP, retried once with the server's nonce (RFC 9449 §8, §9). */
  private async withDpop(w: Wallet, url: string, init: RequestInit, accessToken?: string) {
    for (let attempt = 0; ; attempt++) {
      const headers = {
        ...(init.headers as Record<string, string>),
        DPoP: this.dpopHeader(w, url, accessToken),
      }
      const response = await fetch(url, { ...init, headers })
      const nonce = response.headers.get('dpop-nonce')
      if (nonce) this.dpopNonce = nonce
      if (attempt === 0 && (response.status === 400 || response.status === 401) && nonce) {
        const body = (await response.clone().json()) as { error?: string }
        if (body.error === 'use_dpop_nonce') continue
      }
      return response
    }
  }

  private async credential(w: Wallet, token: string, dpop: boolean, configurationId: string) {
    const { c_nonce } = (await json(await fetch(`${this.issuer}/nonce`, { method: 'POST' }), 'nonce')) as {
      c_nonce: string
    }
    const proof = signJws(
      { typ: 'openid4vci-proof+jwt', alg: 'ES256', jwk: w.holder.publicJwk },
      { aud: this.issuer, iat: Math.floor(Date.now() / 1000), nonce: c_nonce },
      w.holder.privateKey,
    )
    const url = `${this.issuer}/credential`
    const init = {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `${dpop ? 'DPoP' : 'Bearer'} ${token}` },
      body: JSON.stringify({ credential_configuration_id: configurationId, proofs: { jwt: [proof] } }),
    }
    const answer = await json(
      dpop ? await this.withDpop(w, url, init, token) : await fetch(url, init),
      'credential',
    )
    if (!Array.isArray(answer.credentials) || answer.credentials.length !== 1)
      throw new Error('no credential')
  }

  async preAuthorized(dpop: boolean) {
    const w = wallet()
    const offer = await this.offer('bench-pre')
    const code = offer.grants[PRE_AUTHORIZED_GRANT]?.['pre-authorized_code'] as string
    const url = `${this.issuer}/token`
    const init = {
      method: 'POST',
      headers: FORM,
      body: new URLSearchParams({ grant_type: PRE_AUTHORIZED_GRANT, 'pre-authorized_code': code }).toString(),
    }
    const token = await json(dpop ? await this.withDpop(w, url, init) : await fetch(url, init), 'token')
    if (token.token_type !== (dpop ? 'DPoP' : 'Bearer')) throw new Error(`token_type ${token.token_type}`)
    await this.credential(w, token.access_token as string, dpop, 'bench-pre')
  }

  async authorizationCode() {
    const w = wallet()
    const offer = await this.offer('bench-code')
    const issuerState = offer.grants.authorization_code?.issuer_state as string
    const pkce = newPkce()
    const attestation = () => ({
      'OAuth-Client-Attestation': w.attestation,
      'OAuth-Client-Attestation-PoP': createClientAttestationPop(
        { privateKey: w.instance.privateKey, alg: 'ES256' },
        { clientId: CLIENT_ID, audience: this.issuer },
      ),
    })
    const par = await json(
      await fetch(`${this.issuer}/par`, {
        method: 'POST',
        headers: { ...FORM, ...attestation() },
        body: new URLSearchParams({
          response_type: 'code',
          client_id: CLIENT_ID,
          redirect_uri: REDIRECT_URI,
          code_challenge: pkce.challenge,
          code_challenge_method: 'S256',
          issuer_state: issuerState,
          state: 'bench',
        }).toString(),
      }),
      'par',
    )
    const authorize = await fetch(
      `${this.issuer}/authorize?${new URLSearchParams({ client_id: CLIENT_ID, request_uri: par.request_uri as string })}`,
      { redirect: 'manual' },
    )
    const code = new URL(authorize.headers.get('location') ?? 'x:').searchParams.get('code')
    if (!code) throw new Error(`authorize: ${authorize.status}`)
    const tokenUrl = `${this.issuer}/token`
    const token = await json(
      await this.withDpop(w, tokenUrl, {
        method: 'POST',
        headers: { ...FORM, ...attestation() },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          code_verifier: pkce.verifier,
          redirect_uri: REDIRECT_URI,
          client_id: CLIENT_ID,
        }).toString(),
      }),
      'token',
    )
    await this.credential(w, token.access_token as string, true, 'bench-code')
  }
}

// ---------------------------------------------------------------------------------------------------

async function main() {
  const { values } = parseArgs({
    options: {
      smoke: { type: 'boolean', default: false },
      flows: { type: 'string' },
      rounds: { type: 'string' },
    },
  })
  const flows = Number(values.flows ?? (values.smoke ? 5 : 100))
  const rounds = Number(values.rounds ?? (values.smoke ? 1 : 3))
  if (!Number.isInteger(flows) || flows < 1 || !Number.isInteger(rounds) || rounds < 1) {
    console.error('usage: node --import tsx bench/authorization-code.ts [--smoke] [--flows N] [--rounds R]')
    process.exit(2)
  }
  const service = await startService()
  try {
    const rp = new RelyingPartyClient(service.url)
    const appToken = await rp.token({ keyId: APP_KEY.id, secret: APP_KEY.secret, tenant: TENANT })
    const run = new Flows(rp, appToken, `${service.url}/oid4vci/${TENANT}`)
    const kinds = {
      'pre-authorized': () => run.preAuthorized(false),
      'pre-authorized + DPoP': () => run.preAuthorized(true),
      'authorization code (PAR, PKCE, DPoP, attestation)': () => run.authorizationCode(),
    }
    // Warm-up: the first flows load modules, keys and statements.
    for (const flow of Object.values(kinds)) for (let i = 0; i < 3; i++) await flow()
    const totals = new Map<string, { cpu: number; wall: number; n: number }>()
    for (let round = 0; round < rounds; round++) {
      for (const [name, flow] of Object.entries(kinds)) {
        const cpuBefore = await service.cpu()
        const start = performance.now()
        for (let i = 0; i < flows; i++) await flow()
        const wall = performance.now() - start
        const cpu = (await service.cpu()) - cpuBefore
        const total = totals.get(name) ?? { cpu: 0, wall: 0, n: 0 }
        totals.set(name, { cpu: total.cpu + cpu, wall: total.wall + wall, n: total.n + flows })
      }
    }
    const base = totals.get('pre-authorized') as { cpu: number; n: number }
    const baseCpu = base.cpu / base.n
    console.log(
      `# Issuer CPU per issuance, authorization code vs pre-authorized (${rounds} round(s) × ${flows} flows each, interleaved)`,
    )
    console.log(`node ${process.version}, ${cpus().length} cores, load ${loadavg()[0]?.toFixed(2)}`)
    console.log('')
    console.log('| flow | server CPU ms/issuance | wall ms/issuance | CPU ratio to pre-authorized |')
    console.log('|---|---|---|---|')
    for (const [name, t] of totals) {
      const cpu = t.cpu / t.n
      console.log(
        `| ${name} | ${cpu.toFixed(2)} | ${(t.wall / t.n).toFixed(2)} | ${(cpu / baseCpu).toFixed(2)} |`,
      )
    }
    console.log('')
    console.log(
      'Each issuance includes the relying party creating the offer (4.2) and submitting its content (4.4). CPU: the service process (process.cpuUsage, user + system), the wallet side excluded.',
    )
  } finally {
    service.child.disconnect()
  }
}

async function serve() {
  const dataDir = mkdtempSync(join(tmpdir(), 'vc-harness-bench-code-'))
  const raw = JSON.parse(readFileSync(DEMO_CONFIG_PATH, 'utf8'))
  const tenant = raw.tenants.find((t: { id: string }) => t.id === TENANT)
  tenant.issuanceTemplates.push(...TEMPLATES)
  tenant.apiKeys.push(APP_KEY)
  tenant.testWalletProvider = true
  // The demo's webhooks.mode "test" exempts loopback from the rate limits: the bench asks faster than people.
  const server = await startServer({
    config: parseConfig(raw, 'bench/authorization-code.ts'),
    host: '127.0.0.1',
    port: 0,
    dataDir,
  })
  process.on('message', (message: string) => {
    if (message === 'cpu') process.send?.({ cpu: process.cpuUsage() })
  })
  process.on('disconnect', async () => {
    await server.close()
    rmSync(dataDir, { recursive: true, force: true })
  })
  process.send?.({ url: server.url })
}

// Last: the functions and classes above are initialised by now.
if (process.argv.includes('--serve')) await serve()
else await main()
