import { DC_API_PROTOCOLS } from '../../shared/dc-api.ts'
import { JWT_SECURITY } from '../auth/security.ts'
import { problems } from '../errors/schemas.ts'
import { Type } from '../util/typebox.ts'

const Open = (description: string) => Type.Object({}, { additionalProperties: true, description })
const IsoTime = Type.String({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds.' })

export const createSessionSchema = {
  tags: ['Verification'],
  summary: 'Create a verification session (interface 4.6)',
  security: JWT_SECURITY,
  description:
    'Opens a session for the verification template `ssiConfigId`: the OpenID4VP authentication request (encode it as the QR code) and what it asks for: the presentation definition (profile pe), or the DCQL query and the session id (profile dcql, OpenID4VP 1.0).',
  body: Type.Object(
    { ssiConfigId: Type.String({ minLength: 1, maxLength: 128, description: 'Verification template id.' }) },
    { additionalProperties: false },
  ),
  response: {
    201: Type.Union([
      Type.Object({
        authentication_request: Type.String({
          description:
            'openid-vp://?client_id=…&redirect_uri=…&request_uri=…&response_mode=direct_post&response_type=vp_token&scope=openid',
        }),
        presentation_definition: Open('Section 2.8; its id is the session id.'),
      }),
      Type.Object({
        authentication_request: Type.String({
          description:
            'profile dcql: openid4vp://?client_id=<prefix>:…&request_uri=…[&request_uri_method=post], or every parameter by value for the redirect_uri prefix.',
        }),
        dcql_query: Open('profile dcql: the DCQL query of the request (OpenID4VP 1.0 §6).'),
        id: Type.String({ description: 'profile dcql: the session id (4.7).' }),
        dcApi: Type.Optional(
          Type.Object(
            {
              protocol: Type.Enum(Object.values(DC_API_PROTOCOLS), {
                description: 'The exchange protocol of the request entry (OpenID4VP 1.0 Appendix A.1).',
              }),
              request: Type.String({
                description:
                  "GET: the {protocol, data} entry for navigator.credentials.get (wallet-facing, no token; the wallet's request_retrieved step).",
              }),
              response: Type.String({
                description:
                  'POST application/json {origin, protocol, data}: the DigitalCredential the page received, with the origin of the page that asked.',
              }),
              expectedOrigins: Type.Array(Type.String(), {
                description: 'The origins an answer is accepted from (a signed request’s expected_origins).',
              }),
            },
            {
              description:
                'profile dcql with dcql.dcApi: the session offered over the W3C Digital Credentials API too (docs/verification.md).',
            },
          ),
        ),
      }),
    ]),
    ...problems(400, 401, 403, 404, 413, 415),
  },
}

const SessionBody = Type.Object({
  Id: Type.String(),
  Status: Type.Enum(['PENDING', 'VERIFIED', 'REJECTED', 'EXPIRED'], {
    description: 'Extension: the session state (docs/verification.md).',
  }),
  PresentationSubmission: Type.Union([Type.Null(), Open('What the holder shared; set only when VERIFIED.')]),
  PresentationSubmissionFormat: Type.String({
    description: '"jwt_vp" (pe) or "dcql" (dcql: the vp_token object) when VERIFIED, else empty.',
  }),
  Validations: Type.Union([Type.Null(), Open('Per-check outcome once the wallet answered.')]),
  PresentationDefinition: Type.Union([Type.Null(), Open('Section 2.8; null for a dcql session.')]),
  AuthRequest: Open(
    'The request object claims, plus redirect_uri and (pe) the definition members; a dcql session carries dcql_query.',
  ),
  RequestedAt: Type.Union([Type.Null(), IsoTime]),
  CreatedAt: IsoTime,
  UpdatedAt: IsoTime,
  ExpiredAt: IsoTime,
  DeletedAt: Type.Null(),
  SourceWallet: Type.String({ description: "The responding wallet's User-Agent, empty when none." }),
  Callback: Type.String({ description: "The template's webhook URL, empty when none." }),
  Subject: Type.String({ description: 'The holder DID once it has proven it, empty before.' }),
})

export const readSessionSchema = {
  tags: ['Verification'],
  summary: 'Read a verification session (interface 4.7)',
  security: JWT_SECURITY,
  description: '202 while the session waits for the wallet; 200 once it is VERIFIED, REJECTED or EXPIRED.',
  params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) }),
  response: { 200: SessionBody, 202: SessionBody, ...problems(401, 403, 404) },
}
