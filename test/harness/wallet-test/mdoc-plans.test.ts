import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  ISSUANCE_TEMPLATE,
  verificationTemplate,
  walletTestConfig,
} from '../../../src/harness/wallet-test/config.ts'
import { planCases, tenantOf, type WalletCase } from '../../../src/harness/wallet-test/plans.ts'
import { PRESENTATION_FAULTS, type PresentationFault } from '../../../src/service/faults/index.ts'
import {
  DOCTYPE_MISMATCH,
  MISMATCHED_DOCTYPE,
  mismatchedDoctype,
  requestObjectFault,
  UNOBTAINABLE_DOCTYPE,
  unsatisfiableDcqlQuery,
} from '../../../src/service/faults/requests.ts'
import { generateKeyPair } from '../../../src/shared/did-key.ts'
import { MDL_DOCTYPE, MDL_NAMESPACE } from '../../../src/shared/mdoc.ts'
import { mdocCertificateProblems, parseCertificates } from '../../../src/shared/x509.ts'

// The ISO mdoc plans (issuance-mdoc, presentation-mdoc) as data, their tenants' configuration (one IACA for
// the run, in the trust anchor file beside the verifier CA), and the doctype-mismatch fault. That our wallet
// passes them and a careless one fails them: our-wallet.test.ts and careless-wallet.test.ts (plan all), and
// test/cli/wallet-test-mdoc.test.ts through the CLI.

/** doctype-mismatch is a case once faults/index.ts lists it among PRESENTATION_FAULTS. */
const DOCTYPE_LISTED = (PRESENTATION_FAULTS as readonly string[]).includes(DOCTYPE_MISMATCH)

const faultsOf = (plan: 'issuance-mdoc' | 'presentation-mdoc') =>
  planCases(plan).flatMap((c) => (c.fault ? [c.fault] : []))

describe('issuance-mdoc', () => {
  const cases = planCases('issuance-mdoc')

  test('an mDL over OpenID4VCI 1.0: a positive case and the refusals of a bad mdoc, each with its clauses', () => {
    assert.deepEqual(
      cases.map((c) => [c.id, c.expect]),
      [
        ['issuance-mdoc:positive', 'accept'],
        ['issuance-mdoc:metadata-issuer-mismatch', 'refuse'],
        ['issuance-mdoc:credential-foreign-signature', 'refuse'],
        ['issuance-mdoc:credential-other-holder', 'refuse'],
        ['issuance-mdoc:mdoc-digest-mismatch', 'refuse'],
        ['issuance-mdoc:credential-expired', 'refuse'],
        ['issuance-mdoc:credential-revoked', 'refuse'],
      ],
    )
    for (const c of cases) {
      assert.deepEqual(c.flow, {
        kind: 'issuance',
        generation: '1.0',
        format: 'mso_mdoc',
        credentialType: MDL_DOCTYPE,
      })
    }
    const byFault = (fault: string) => cases.find((c) => c.fault === fault) as WalletCase
    assert.ok(cases[0]?.sources.includes('@OID4VCI-1.0-A.2'))
    assert.match(byFault('credential-foreign-signature').rule ?? '', /DS certificate outside the IACA/)
    assert.ok(byFault('credential-foreign-signature').sources.includes('@ISO18013-5-9.3.1'))
    assert.match(byFault('mdoc-digest-mismatch').rule ?? '', /digest mismatch/)
    assert.match(byFault('credential-other-holder').rule ?? '', /deviceKey/)
    assert.match(byFault('credential-expired').rule ?? '', /validityInfo\.validUntil/)
  })

  test("its template issues the mDL: doctype, ES256, claims as namespace.element; every tenant has the run's IACA", async () => {
    const present = planCases('presentation-mdoc')
    const { config, trustAnchorPem, iacaPem } = await walletTestConfig([...cases, ...present], '127.0.0.1')
    const template = config.tenants.find((t) => t.id === tenantOf(cases[0] as WalletCase))
      ?.issuanceTemplates[0]
    assert.ok(template)
    assert.deepEqual(
      [template.id, template.format, template.doctype, template.signingAlg, template.credentialType],
      [ISSUANCE_TEMPLATE, 'mso_mdoc', MDL_DOCTYPE, 'ES256', MDL_DOCTYPE],
    )
    assert.deepEqual(
      template.claims?.map((c) => c.path),
      ['family_name', 'given_name', 'birth_date'].map((e) => `${MDL_NAMESPACE}.${e}`),
    )
    // one IACA for every tenant: the setup case's mdoc is trusted by the presentation cases' tenants
    const iacas = new Set(config.tenants.map((t) => t.mdocIaca?.certificate))
    assert.deepEqual([...iacas], [iacaPem])
    assert.deepEqual(mdocCertificateProblems(iacaPem, 'iaca'), [])
    // the trust anchor file: the verifier CA, then the IACA
    const anchors = parseCertificates(trustAnchorPem)
    assert.equal(anchors.length, 2)
    assert.match(anchors[0]?.subject ?? '', /wallet test CA/)
    assert.equal(anchors[1]?.toString('pem').trim(), iacaPem.trim())
  })
})

describe('presentation-mdoc', () => {
  const cases = planCases('presentation-mdoc')

  test('it issues the mDL first, answers valid requests (HAIP x509_hash + direct_post.jwt, and a DID) before nonce-reused', () => {
    const [setup, ...rest] = cases
    assert.equal(setup?.id, 'presentation-mdoc:setup')
    assert.deepEqual(setup?.flow, {
      kind: 'issuance',
      generation: '1.0',
      format: 'mso_mdoc',
      credentialType: MDL_DOCTYPE,
    })
    for (const c of rest) {
      assert.equal(c.flow.kind, 'presentation', c.id)
      if (c.flow.kind !== 'presentation') continue
      assert.deepEqual(
        [c.flow.profile, c.flow.format, c.flow.credentialType],
        ['dcql', 'mso_mdoc', MDL_DOCTYPE],
      )
    }
    const positives = rest.filter((c) => c.expect === 'accept')
    assert.deepEqual(
      positives.map((c) =>
        c.flow.kind === 'presentation' ? [c.id, c.flow.clientIdPrefix, c.flow.responseMode] : [],
      ),
      [
        ['presentation-mdoc:positive', 'decentralized_identifier', 'direct_post'],
        ['presentation-mdoc:positive-x509-hash-jwt', 'x509_hash', 'direct_post.jwt'],
      ],
    )
    for (const p of positives)
      assert.ok(
        p.sources.some((s) => s.startsWith('@OID4VP-1.0-B.2.6')),
        p.id,
      )
    const ids = cases.map((c) => c.id)
    assert.ok(ids.indexOf('presentation-mdoc:positive') < ids.indexOf('presentation-mdoc:nonce-reused'))
  })

  test('the verifier faults that make sense for an mdoc request, doctype-mismatch among them once the service lists it', () => {
    assert.deepEqual(faultsOf('presentation-mdoc'), [
      'request-foreign-signature',
      'client-id-mismatch',
      'nonce-missing',
      'nonce-reused',
      'request-expired',
      'query-unsatisfiable',
      ...(DOCTYPE_LISTED ? ['doctype-mismatch'] : []),
    ])
    const foreign = cases.find((c) => c.fault === 'request-foreign-signature')
    assert.equal(foreign?.flow.kind === 'presentation' && foreign.flow.clientIdPrefix, 'x509_hash')
  })

  test('its verification template asks for the mDL by doctype and family_name as an element', () => {
    const positive = cases.find((c) => c.id === 'presentation-mdoc:positive-x509-hash-jwt')
    assert.ok(positive?.flow.kind === 'presentation')
    assert.deepEqual(verificationTemplate(positive.flow), {
      id: 'check',
      name: `Wallet test: ${MDL_DOCTYPE}`,
      credentialTypes: [MDL_DOCTYPE],
      requestedFields: [{ path: '$.credentialSubject.family_name' }],
      profile: 'dcql',
      dcql: {
        format: 'mso_mdoc',
        clientIdPrefix: 'x509_hash',
        responseMode: 'direct_post.jwt',
        requestUriMethod: 'get',
      },
    })
  })
})

describe('the mdoc request faults (faults/requests.ts)', () => {
  const mdlQuery = {
    credentials: [
      {
        id: 'mdl',
        format: 'mso_mdoc',
        meta: { doctype_value: MDL_DOCTYPE },
        claims: [{ path: [MDL_NAMESPACE, 'family_name'] }],
      },
    ],
  }
  const signer = { alg: 'ES256' as const, privateKey: generateKeyPair('ES256').privateKey }

  test("doctype-mismatch signs the query with another doctype_value and the mDL's claims; the session keeps the genuine one", () => {
    const claims = { client_id: 'decentralized_identifier:did:key:z', nonce: 'n', dcql_query: mdlQuery }
    const shown = requestObjectFault(DOCTYPE_MISMATCH as PresentationFault, claims, signer, Date.now())
    assert.deepEqual(shown.claims.dcql_query, {
      credentials: [{ ...mdlQuery.credentials[0], meta: { doctype_value: MISMATCHED_DOCTYPE } }],
    })
    assert.notEqual(MISMATCHED_DOCTYPE, MDL_DOCTYPE)
    assert.equal(shown.privateKey, signer.privateKey)
    assert.deepEqual(claims.dcql_query, mdlQuery, 'the claims the session stores are not changed')
  })

  test('doctype-mismatch is refused (409) for a query without an mso_mdoc credential', () => {
    assert.throws(
      () =>
        mismatchedDoctype({ credentials: [{ id: 'pid', format: 'dc+sd-jwt', meta: { vct_values: ['x'] } }] }),
      (e: Error & { statusCode?: number }) => /no mso_mdoc credential/.test(e.message),
    )
  })

  test('query-unsatisfiable asks an mso_mdoc query for a doctype nobody holds (Appendix B.2.3 doctype_value)', () => {
    assert.deepEqual(unsatisfiableDcqlQuery(mdlQuery).credentials[0]?.meta, {
      doctype_value: UNOBTAINABLE_DOCTYPE,
    })
  })
})
