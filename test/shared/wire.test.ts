import assert from 'node:assert/strict'
import { test } from 'node:test'
import * as wire from '../../src/shared/wire.ts'

// The one place the wire strings are written out by hand: everything else, tests included, imports
// src/shared/wire.ts, so a slip there would pass every other test. These are the specs' literals.
test('wire constants are the strings the specs define', () => {
  assert.deepEqual(
    { ...wire },
    {
      PRE_AUTHORIZED_GRANT: 'urn:ietf:params:oauth:grant-type:pre-authorized_code',
      PROOF_TYP: 'openid4vci-proof+jwt',
      REQUEST_OBJECT_TYP: 'oauth-authz-req+jwt',
      SD_JWT_VC_TYP: 'dc+sd-jwt',
      SD_JWT_VC_TYP_LEGACY: 'vc+sd-jwt',
      KB_JWT_TYP: 'kb+jwt',
      STATUS_LIST_JWT_TYP: 'statuslist+jwt',
      JWT_TYP: 'JWT',
      REQUEST_OBJECT_MEDIA_TYPE: 'application/oauth-authz-req+jwt',
      FORM_MEDIA_TYPE: 'application/x-www-form-urlencoded',
      PROBLEM_MEDIA_TYPE: 'application/problem+json',
      VC_JWT_MEDIA_TYPE: 'application/vc+jwt',
      STATUS_LIST_JWT_MEDIA_TYPE: 'application/statuslist+jwt',
      JWT_MEDIA_TYPE: 'application/jwt',
      PEM_MEDIA_TYPE: 'application/x-pem-file',
      SIOP_AUDIENCE: 'https://self-issued.me/v2',
      CREDENTIAL_OFFER_SCHEME: 'openid-credential-offer',
      AUTHORIZATION_REQUEST_SCHEME: 'openid-vp',
      OPENID4VP_SCHEME: 'openid4vp',
      AUTHORIZATION_CODE_GRANT: 'authorization_code',
      PAR_REQUEST_URI_PREFIX: 'urn:ietf:params:oauth:request_uri:',
      OPENID_CREDENTIAL: 'openid_credential',
    },
  )
})
