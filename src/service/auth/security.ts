// How the OpenAPI document (/docs/json, Swagger UI at /docs) says a call authenticates. Every route behind
// `guard` (auth/guard.ts) declares JWT_SECURITY in its schema, the login BASIC_SECURITY, the OpenID4VCI
// endpoints that take the wallet's access token WALLET_TOKEN_SECURITY;
// test/service/openapi-security.test.ts proves that exactly the calls answering 401 without credentials declare one.

/** The schemes of `components.securitySchemes`. */
export const SECURITY_SCHEMES = {
  jwt: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description:
      'The access token from the login (interface 4.1, its `Token` response header), sent as ' +
      '`Authorization: jwt <token>`. In Swagger UI\'s "Authorize" dialog type the whole value, `jwt eyJ…` ' +
      '(the word jwt, a space, the token); `Bearer <token>` is accepted too.',
  },
  basic: {
    type: 'http',
    scheme: 'basic',
    description: 'Login only: the API key id as the user name and its secret as the password.',
  },
  walletToken: {
    type: 'http',
    scheme: 'bearer',
    description:
      "Wallet-facing: the OAuth access token of the issuer's token endpoint (pre-authorized code grant), for " +
      'the credential, deferred credential and notification endpoints (docs/issuance.md).',
  },
} as const

/** `security` of a call made with an access token. */
export const JWT_SECURITY = [{ jwt: [] as string[] }]
/** `security` of the login. */
export const BASIC_SECURITY = [{ basic: [] as string[] }]
/** `security` of the OpenID4VCI endpoints a wallet calls with its access token. */
export const WALLET_TOKEN_SECURITY = [{ walletToken: [] as string[] }]
