import { JWT_SECURITY } from '../auth/security.ts'
import { problems } from '../errors/schemas.ts'
import { Type } from '../util/typebox.ts'
import { MAX_CREDENTIALS_PER_SUBMISSION } from './credentials.ts'

const IsoTime = Type.String({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds.' })

export const ProcessSchema = Type.Object(
  {
    id: Type.String({ description: 'Process id; also the last path segment of the offer URL.' }),
    status: Type.Enum(['PENDING', 'ISSUED', 'REJECTED']),
    group: Type.String({ description: 'Issuance template id.' }),
    type: Type.String({ description: 'Process category. Always OIDC4VCI_PRE_AUTHORIZED for now.' }),
    data: Type.Optional(
      Type.Array(Type.Object({}, { additionalProperties: true }), {
        description: 'Issued credentials; present only when status is ISSUED.',
      }),
    ),
    validator: Type.Union([Type.Null(), Type.Object({}, { additionalProperties: true })], {
      description: 'What the holder shared (section 2.4); null until the wallet has shared something.',
    }),
    createdAt: IsoTime,
    updatedAt: IsoTime,
  },
  { $id: 'IssuanceProcess' },
)

const processRef = Type.Unsafe<unknown>({ $ref: 'IssuanceProcess#' })
const ProcessId = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) })

export const createOfferSchema = {
  tags: ['Issuance'],
  summary: 'Create an issuance offer (interface 4.2)',
  security: JWT_SECURITY,
  description: 'Opens a PENDING issuance process for the template `group` and returns its offer deep link.',
  body: Type.Object(
    { group: Type.String({ minLength: 1, maxLength: 128, description: 'Issuance template id.' }) },
    { additionalProperties: false },
  ),
  response: {
    201: Type.Object({
      credential_offer_uri: Type.String({
        description: '<scheme>://?credential_offer_uri=<URL-encoded offer URL>; encode this as the QR code.',
      }),
      tx_code: Type.Optional(
        Type.String({
          description:
            'Extension: the transaction code the user must type in the wallet, present only when the template sets txCode. Shown once; give it to the user out of band.',
        }),
      ),
    }),
    ...problems(400, 401, 403, 404, 413, 415),
  },
}

export const readProcessSchema = {
  tags: ['Issuance'],
  summary: 'Read one issuance process (interface 4.3)',
  security: JWT_SECURITY,
  params: ProcessId,
  response: { 200: processRef, ...problems(401, 403, 404) },
}

export const listProcessesSchema = {
  tags: ['Issuance'],
  summary: 'List issuance processes (interface 4.5, administrators)',
  security: JWT_SECURITY,
  description:
    'Oldest first, by (createdAt, id). The body is an array; when more rows exist the `Link` header carries ' +
    'rel="next" with an opaque `cursor`.',
  querystring: Type.Object(
    {
      status: Type.Optional(Type.Enum(['PENDING', 'ISSUED', 'REJECTED'])),
      limit: Type.Optional(Type.Integer({ minimum: 1, description: 'Page size; default 50, at most 200.' })),
      cursor: Type.Optional(
        Type.String({ maxLength: 512, description: 'From the previous page’s Link header.' }),
      ),
    },
    { additionalProperties: false },
  ),
  response: {
    200: {
      ...Type.Array(processRef),
      headers: Type.Object({
        Link: Type.Optional(Type.String({ description: 'rel="next" when more rows exist' })),
      }),
    },
    ...problems(400, 401, 403),
  },
}

const DateTime = (description: string) =>
  Type.String({ description: `${description} ISO 8601 date-time with a time zone.` })
const Open = (description: string) => Type.Object({}, { additionalProperties: true, description })

/**
 * A credential object of section 2.3 as the relying party submits it (4.4). The service fills in issuer,
 * holder (`credentialSubject.id`), dates it is not given and `credentialStatus`.
 */
export const CredentialSubmission = Type.Object(
  {
    '@context': Type.Optional(
      Type.Array(Type.String(), {
        minItems: 1,
        description: 'Starts with https://www.w3.org/2018/credentials/v1. Default: just that context.',
      }),
    ),
    id: Type.Optional(Type.String({ description: 'A URI, unique per submission. Default: a urn:uuid.' })),
    type: Type.Optional(
      Type.Array(Type.String(), {
        minItems: 1,
        description:
          'Starts with VerifiableCredential and ends with the template’s credential type. Required unless credentialSchema is given.',
      }),
    ),
    issuer: Type.Optional(
      Type.Union([Type.String(), Open('An issuer object; its id is set to the signing DID.')], {
        description: 'This template’s issuer DID, or left out.',
      }),
    ),
    issuanceDate: Type.Optional(DateTime('Default: the moment of signing.')),
    validFrom: Type.Optional(DateTime('Default: issuanceDate.')),
    expirationDate: Type.Optional(DateTime('Default: validityDays of the template after issuance, or none.')),
    validUntil: Type.Optional(DateTime('Default: none.')),
    credentialSubject: Type.Object(
      {
        id: Type.Optional(
          Type.String({
            description: 'The holder DID; left out, the holder the wallet proves is filled in.',
          }),
        ),
      },
      { additionalProperties: true, description: 'The claims: at least one besides id.' },
    ),
    credentialSchema: Type.Optional(
      Type.Union(
        [
          Type.Object({ id: Type.String(), type: Type.String() }, { additionalProperties: true }),
          Type.Array(Type.Object({ id: Type.String(), type: Type.String() }, { additionalProperties: true })),
        ],
        { description: 'Schema (or schemas) with id (URL) and type.' },
      ),
    ),
    evidence: Type.Optional(Type.Union([Open('Evidence'), Type.Array(Type.Unknown())])),
    name: Type.Optional(Type.Unknown()),
    description: Type.Optional(Type.Unknown()),
    termsOfUse: Type.Optional(Type.Unknown()),
    refreshService: Type.Optional(Type.Unknown()),
  },
  {
    additionalProperties: false,
    description: 'Section 2.3. credentialStatus is filled in by the service; sending it is refused.',
  },
)

/**
 * The 4.4 body as documented and typed. Ajv checks only that it is an array (`SubmittedArray`):
 * prepareCredentials checks every item and names each problem per index as `invalid_credential`
 * (`errors[].field` like `body/0/credentialSubject/id`), which a schema failure could not.
 */
export const SubmittedCredentials = Type.Array(CredentialSubmission, {
  minItems: 1,
  maxItems: MAX_CREDENTIALS_PER_SUBMISSION,
  description: `One to ${MAX_CREDENTIALS_PER_SUBMISSION} credential objects.`,
})
export const SubmittedArray = Type.Array(Type.Unknown())

export const submitCredentialsSchema = {
  tags: ['Issuance'],
  summary: 'Submit credentials to an issuance process (interface 4.4)',
  security: JWT_SECURITY,
  description:
    'By the linked application or a tenant administrator. Each credential object needs `credentialSubject` and ' +
    '`type` (or `credentialSchema`). Signed at once when the wallet has bound a holder (status ISSUED), ' +
    'otherwise kept and signed the moment the wallet presents its proof. Answers an array holding the process.',
  params: ProcessId,
  body: SubmittedCredentials,
  response: { 200: Type.Array(processRef), ...problems(400, 401, 403, 404, 409, 413, 415) },
}

export const RejectBody = Type.Object(
  { reason: Type.Optional(Type.String({ maxLength: 500, description: 'Shown to the wallet.' })) },
  { additionalProperties: false },
)

export const rejectProcessSchema = {
  tags: ['Issuance'],
  summary: 'Reject a PENDING issuance process (extension)',
  security: JWT_SECURITY,
  description: 'The body `{reason?}` is optional: no body at all is accepted too.',
  params: ProcessId,
  body: RejectBody,
  response: { 200: processRef, ...problems(400, 401, 403, 404, 409) },
}

export const credentialStatusSchema = {
  tags: ['Issuance'],
  summary: 'Revoke, suspend or reinstate issued credentials (extension)',
  security: JWT_SECURITY,
  params: ProcessId,
  body: Type.Object(
    {
      status: Type.Enum(['active', 'revoked', 'suspended'], { description: 'revoked is final.' }),
      credentialIds: Type.Optional(
        Type.Array(Type.String({ minLength: 1, maxLength: 512 }), {
          minItems: 1,
          maxItems: 20,
          description: 'Credential ids of the process; default: all of them.',
        }),
      ),
    },
    { additionalProperties: false },
  ),
  response: {
    200: Type.Object({
      credentials: Type.Array(
        Type.Object({ id: Type.String(), status: Type.Enum(['active', 'revoked', 'suspended']) }),
      ),
    }),
    ...problems(400, 401, 403, 404, 409),
  },
}
