import { JWT_SECURITY } from '../auth/security.ts'
import { IssuanceTemplate, TenantId, VerificationTemplate } from '../config/schema.ts'
import { problems } from '../errors/schemas.ts'
import { type TSchema, Type } from '../util/typebox.ts'

const IsoTime = Type.String({ format: 'date-time' })
const tags = ['Management portal']

const ApiKeyView = Type.Object({
  id: Type.String({ format: 'uuid' }),
  role: Type.Enum(['app', 'admin', 'operator']),
  template: Type.Union([Type.String(), Type.Null()]),
  label: Type.Union([Type.String(), Type.Null()]),
  source: Type.Enum(['config', 'portal']),
  createdAt: IsoTime,
  revokedAt: Type.Union([IsoTime, Type.Null()]),
})
const ApiKeyWithSecret = Type.Intersect([
  ApiKeyView,
  Type.Object({ secret: Type.String({ description: 'Shown once; only a hash is stored.' }) }),
])

export const createTenantSchema = {
  tags,
  summary: 'Create a tenant (operators)',
  security: JWT_SECURITY,
  description: 'Creates an empty tenant and one administrator key whose secret is returned only here.',
  body: Type.Object({ id: TenantId }, { additionalProperties: false }),
  response: {
    201: Type.Object({ id: Type.String(), createdAt: IsoTime, adminKey: ApiKeyWithSecret }),
    ...problems(400, 401, 403, 409, 413, 415),
  },
}

export const createApiKeySchema = {
  tags,
  summary: 'Create an API key',
  security: JWT_SECURITY,
  description: 'The secret is in this response only. Operator keys come only from the configuration file.',
  body: Type.Object(
    {
      role: Type.Enum(['app', 'admin']),
      template: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
      label: Type.Optional(Type.String({ maxLength: 200 })),
    },
    { additionalProperties: false },
  ),
  response: { 201: ApiKeyWithSecret, ...problems(400, 401, 403, 404, 413, 415) },
}

export const listApiKeysSchema = {
  tags,
  summary: 'List the API keys of the tenant (no secrets)',
  security: JWT_SECURITY,
  response: { 200: Type.Array(ApiKeyView), ...problems(401, 403) },
}

const IdParam = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) })

export const revokeApiKeySchema = {
  tags,
  summary: 'Revoke an API key',
  security: JWT_SECURITY,
  description: 'Its access tokens stop working at once. Keys declared in the configuration file answer 409.',
  params: IdParam,
  response: { 204: Type.Null(), ...problems(401, 403, 404, 409) },
}

const templateView = (body: TSchema) =>
  Type.Intersect([
    body,
    Type.Object({
      hasWebhookSecret: Type.Boolean(),
      source: Type.Enum(['config', 'portal']),
      createdAt: IsoTime,
      updatedAt: IsoTime,
    }),
  ])

/** "an issuance", "a verification": the article of a summary naming a template kind. */
const article = (word: string) => (/^[aeiou]/i.test(word) ? 'an' : 'a')

/** CRUD schemas for one template kind; the view never includes webhookSecret. */
export function templateSchemas<T extends typeof IssuanceTemplate | typeof VerificationTemplate>(
  kind: string,
  body: T,
) {
  const { webhookSecret: _secret, webhookPreviousSecrets: _previous, ...viewProps } = body.properties
  const View = templateView(Type.Object(viewProps))
  const a = article(kind)
  return {
    create: {
      tags,
      summary: `Create ${a} ${kind} template`,
      security: JWT_SECURITY,
      body,
      response: { 201: View, ...problems(400, 401, 403, 409, 413, 415) },
    },
    list: {
      tags,
      summary: `List ${kind} templates`,
      security: JWT_SECURITY,
      response: { 200: Type.Array(View), ...problems(401, 403) },
    },
    read: {
      tags,
      summary: `Read ${a} ${kind} template`,
      security: JWT_SECURITY,
      params: IdParam,
      response: { 200: View, ...problems(401, 403, 404) },
    },
    replace: {
      tags,
      summary: `Replace ${a} ${kind} template`,
      security: JWT_SECURITY,
      description: 'Full replacement; the id comes from the path. Configuration-file templates answer 409.',
      params: IdParam,
      body: Type.Omit(body, ['id'], { additionalProperties: false }),
      response: { 200: View, ...problems(400, 401, 403, 404, 409, 413, 415) },
    },
    delete: {
      tags,
      summary: `Delete ${a} ${kind} template`,
      security: JWT_SECURITY,
      description:
        'Refused (409) while processes or active API keys refer to it, or when it comes from the configuration file.',
      params: IdParam,
      response: { 204: Type.Null(), ...problems(401, 403, 404, 409) },
    },
  }
}

export const issuanceTemplateSchemas = templateSchemas('issuance', IssuanceTemplate)
export const verificationTemplateSchemas = templateSchemas('verification', VerificationTemplate)

const DeliveryState = Type.Enum(['pending', 'delivered', 'failed', 'disabled'])
const Attempt = Type.Object({
  attempt: Type.Integer(),
  at: IsoTime,
  durationMs: Type.Integer(),
  status: Type.Union([Type.Integer(), Type.Null()], {
    description: "The receiver's HTTP status; null when none came.",
  }),
  outcome: Type.Enum(['delivered', 'retry', 'failed', 'disabled']),
  error: Type.Union([Type.String(), Type.Null()]),
  nextAttemptAt: Type.Union([IsoTime, Type.Null()]),
  trigger: Type.Enum(['automatic', 'redelivery']),
})
const deliveryProps = {
  id: Type.String({ description: 'The webhook-id header: the same for every attempt of the event.' }),
  event: Type.Enum([
    'issuance.issued',
    'issuance.rejected',
    'verification.verified',
    'verification.rejected',
  ]),
  subject: Type.String({ description: 'The issuance process or verification session id.' }),
  template: Type.String(),
  url: Type.String(),
  state: DeliveryState,
  attempts: Type.Integer({ description: 'Attempts in the current round (a redelivery starts a new one).' }),
  nextAttemptAt: Type.Union([IsoTime, Type.Null()]),
  lastStatus: Type.Union([Type.Integer(), Type.Null()]),
  lastError: Type.Union([Type.String(), Type.Null()]),
  createdAt: IsoTime,
  updatedAt: IsoTime,
  deliveredAt: Type.Union([IsoTime, Type.Null()]),
  body: Type.Unknown({ description: 'The section 6 body, exactly as signed and posted.' }),
}
const Delivery = Type.Object(deliveryProps)
const DeliveryWithLog = Type.Object({ ...deliveryProps, log: Type.Array(Attempt) })

/** The delivery log of one template kind's webhooks. */
export function deliveriesSchema(kind: string) {
  return {
    tags,
    summary: `Webhook deliveries of ${article(kind)} ${kind} template, newest first`,
    security: JWT_SECURITY,
    description:
      'The endpoint state (disabled after a 410 Gone until the template is saved again) and one entry per event. ' +
      'Page on with `before` = the last id of a page.',
    params: IdParam,
    querystring: Type.Object(
      {
        limit: Type.Optional(
          Type.Integer({ minimum: 1, description: 'Page size; default 50, at most 200.' }),
        ),
        before: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
        state: Type.Optional(DeliveryState),
      },
      { additionalProperties: false },
    ),
    response: {
      200: Type.Object({
        endpoint: Type.Object({
          url: Type.Union([Type.String(), Type.Null()]),
          disabled: Type.Boolean(),
          disabledAt: Type.Union([IsoTime, Type.Null()]),
          disabledReason: Type.Union([Type.String(), Type.Null()]),
        }),
        deliveries: Type.Array(Delivery),
      }),
      ...problems(400, 401, 403, 404),
    },
  }
}

export const readDeliverySchema = {
  tags,
  summary: 'One webhook delivery with every attempt',
  security: JWT_SECURITY,
  params: IdParam,
  response: { 200: DeliveryWithLog, ...problems(401, 403, 404) },
}

export const redeliverSchema = {
  tags,
  summary: 'Deliver a webhook event again',
  security: JWT_SECURITY,
  description:
    'A new round of attempts for an event that is delivered, failed or disabled, with the same webhook-id (receivers ' +
    'deduplicate on it). 409 while it is still pending or while its endpoint is disabled.',
  params: IdParam,
  response: { 202: DeliveryWithLog, ...problems(401, 403, 404, 409) },
}
