import { JWT_SECURITY } from '../auth/security.ts'
import { problems } from '../errors/schemas.ts'
import { Type } from '../util/typebox.ts'

const params = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) })
const tags = ['Event streams']
// Documents the stream; the route writes it to the raw response (hijacked), never through a serializer.
const EventStream = Type.String({ description: 'text/event-stream' })

export const issuanceEventsSchema = {
  tags,
  summary: 'Server-sent events of one issuance process (same caller as 4.3)',
  security: JWT_SECURITY,
  description:
    'text/event-stream of `event: state` messages {kind, id, status, step, at}: a snapshot first, then each ' +
    'change (offer_retrieved, holder_bound, submitted, issued, rejected, credential_retrieved); EXPIRED when ' +
    'the pre-authorized code lapses unredeemed. The stream ends after ISSUED, REJECTED or EXPIRED.',
  params,
  response: { 200: EventStream, ...problems(401, 403, 404) },
}

export const sessionEventsSchema = {
  tags,
  summary: 'Server-sent events of one verification session (same caller as 4.7)',
  security: JWT_SECURITY,
  description:
    'text/event-stream of `event: state` messages {kind, id, status, step, at}: a snapshot first, then ' +
    'request_retrieved, verified or rejected; EXPIRED at ExpiredAt. The stream ends after VERIFIED, REJECTED or EXPIRED.',
  params,
  response: { 200: EventStream, ...problems(401, 403, 404) },
}
