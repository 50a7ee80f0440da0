@verification @dcql @needs-portal
Feature: A wallet answers a dcql verification session over OpenID4VP 1.0
  A verification template of profile dcql asks in OpenID4VP 1.0 Final: the relying party opens a session
  (interface 4.6) and gets the authentication request, the DCQL query and the session id; the wallet resolves
  the request as the verifier's client identifier prefix prescribes (a request object signed by its did:key,
  by a key certified by the tenant's CA and named by DNS name or certificate hash, or an unsigned request by
  value), fetched by GET or by POST with a wallet_nonce; it selects with DCQL, discloses only the claims asked
  for (SD-JWT VC with a key-binding JWT, or a JWT VP of a jwt_vc_json credential) and answers with a vp_token
  keyed by credential query id, in the clear (direct_post) or encrypted to the session's key
  (direct_post.jwt). The service runs the same named checks as for Presentation Exchange and the relying
  party reads the outcome (4.7, section 6). Every scenario creates its templates through the portal in a
  tenant of its own and uses the real simulated wallet over HTTP: a P-256 holder trusting the tenant's CA.

  Background:
    Given a tenant of our own

  @interface-4.6 @OID4VP-1.0-6
  Scenario: A dcql session's 4.6 answer carries the authentication request, the DCQL query and the session id
    Given the wallet holds an SD-JWT VC VerifiableId
    And a dcql template asking for the family name of a VerifiableId as dc+sd-jwt
    When the application opens a dcql session
    Then the answer carries an openid4vp link whose client_id has the decentralized_identifier prefix and whose request_uri ends with the session id
    And the DCQL query asks for one dc+sd-jwt credential of the wallet's vct and only its familyName claim

  @interface-4.7 @interface-2.9
  Scenario: A dcql session nobody answered reads 202 with no presentation definition and its DCQL query in AuthRequest
    Given a dcql template asking for the family name of a VerifiableId as dc+sd-jwt
    And the application has opened a dcql session
    Then the dcql session reads 202 PENDING with no presentation definition and the DCQL query in AuthRequest

  @interface-4.7 @OID4VP-1.0-8.1
  Scenario: A verified SD-JWT VC presentation reads VERIFIED with the named checks of the pipeline and the submission format dcql
    Given the wallet holds an SD-JWT VC VerifiableId
    And a dcql template asking for the family name of a VerifiableId as dc+sd-jwt
    And the application has opened a dcql session
    When the wallet presents to the dcql session
    Then the wallet is told the dcql presentation was accepted
    And the dcql session reads 200 VERIFIED with the wallet as subject, every named check passed and the submission format dcql

  @OID4VP-1.0-6.4.1 @interface-4.7 @security
  Scenario: Only the claim the DCQL query asks for is disclosed and shared with the relying party
    Given the wallet holds an SD-JWT VC VerifiableId
    And a dcql template asking for the family name of a VerifiableId as dc+sd-jwt
    And the application has opened a dcql session
    When the wallet presents to the dcql session
    Then the wallet disclosed only the requested claim
    And the dcql session shares only the requested claim

  Scenario Outline: The request of a verifier named by <prefix> is verified as its prefix prescribes and an SD-JWT VC answered by <mode> is VERIFIED
    Given the wallet holds an SD-JWT VC VerifiableId
    And a dcql template asking for the family name of a VerifiableId as dc+sd-jwt, its verifier named by <prefix>, answered by <mode>
    And the application has opened a dcql session
    When the wallet presents to the dcql session
    Then the wallet verified the request as the <prefix> client identifier prefix prescribes
    And the wallet answered by <mode>
    And the dcql session reads 200 VERIFIED with the wallet as subject, every named check passed and the submission format dcql

    @OID4VP-1.0-5.9.3 @OID4VP-1.0-8.2
    Examples: in the clear
      | prefix                   | mode        |
      | decentralized_identifier | direct_post |
      | x509_san_dns             | direct_post |
      | x509_hash                | direct_post |
      | redirect_uri             | direct_post |

    @OID4VP-1.0-5.9.3 @OID4VP-1.0-8.3 @security
    Examples: encrypted to the session's key
      | prefix                   | mode            |
      | decentralized_identifier | direct_post.jwt |
      | x509_san_dns             | direct_post.jwt |
      | x509_hash                | direct_post.jwt |
      | redirect_uri             | direct_post.jwt |

  @OID4VP-1.0-5.10 @OID4VP-1.0-5.10.1
  Scenario Outline: The request of a verifier named by <prefix>, fetched by POST, echoes the wallet_nonce and its <mode> answer is VERIFIED
    Given the wallet holds an SD-JWT VC VerifiableId
    And a dcql template asking for the family name of a VerifiableId as dc+sd-jwt, its verifier named by <prefix>, answered by <mode>, its request fetched by POST
    And the application has opened a dcql session
    When the wallet presents to the dcql session
    Then the wallet fetched the request by POST and the request object echoes its wallet_nonce
    And the wallet verified the request as the <prefix> client identifier prefix prescribes
    And the dcql session reads 200 VERIFIED with the wallet as subject, every named check passed and the submission format dcql

    Examples:
      | prefix                   | mode            |
      | decentralized_identifier | direct_post     |
      | x509_san_dns             | direct_post.jwt |
      | x509_hash                | direct_post     |

  @OID4VP-1.0-B.1.3.1.5 @OID4VP-1.0-5.9.3
  Scenario Outline: A jwt_vc_json degree presented as a JWT VP to a verifier named by <prefix>, answered by <mode>, is VERIFIED
    Given the wallet holds a jwt_vc_json degree credential
    And a dcql template asking for the degree name of a UniversityDegreeCredential as jwt_vc_json, its verifier named by <prefix>, answered by <mode>
    And the application has opened a dcql session
    When the wallet presents to the dcql session
    Then the wallet answered by <mode>
    And the dcql session reads 200 VERIFIED with the wallet as subject, every named check passed and the submission format dcql

    Examples:
      | prefix                   | mode            |
      | decentralized_identifier | direct_post     |
      | x509_san_dns             | direct_post.jwt |
      | redirect_uri             | direct_post     |

  @SD-JWT-VC-3.5
  Scenario: An SD-JWT VC whose issuer key is certified by the tenant's CA (x5c) is trusted through the template's default trust anchor
    Given the wallet holds an x5c-certified SD-JWT VC VerifiableId
    And a dcql template asking for the family name of a VerifiableId as dc+sd-jwt, its verifier named by x509_san_dns, answered by direct_post.jwt
    And the application has opened a dcql session
    When the wallet presents to the dcql session
    Then the wallet is told the dcql presentation was accepted
    And the dcql session reads 200 VERIFIED with the wallet as subject, every named check passed and the submission format dcql

  @SD-JWT-VC-3.5 @security
  Scenario: A template whose trust anchors leave out the issuer's CA rejects an x5c-certified SD-JWT VC under credentialProof
    Given the wallet holds an x5c-certified SD-JWT VC VerifiableId
    And a dcql template asking for the family name of a VerifiableId as dc+sd-jwt
    And the dcql template's trust anchors name only a certificate authority the tenant does not use
    And the application has opened a dcql session
    When the wallet presents to the dcql session
    Then the verifier refuses the dcql answer with HTTP 400 "invalid_presentation"
    And the dcql session reads 200 REJECTED with credentialProof failed naming "x5c"

  @interface-6 @interface-4.7 @needs-webhooks
  Scenario: A verified dcql presentation is reported by exactly one SUCCESS webhook carrying only the requested claim
    Given the wallet holds an SD-JWT VC VerifiableId
    And a dcql template asking for the family name of a VerifiableId as dc+sd-jwt
    And the dcql template sends its webhooks to the harness receiver
    And the application has opened a dcql session
    When the wallet presents to the dcql session
    Then within 10 seconds the receiver got exactly one SUCCESS about the dcql session
    And the webhook carries the wallet as subject and only the requested claim as payload

  @interface-6 @needs-webhooks @security
  Scenario: A rejected dcql presentation is reported by exactly one REJECT webhook naming the failed check
    Given the wallet holds an SD-JWT VC VerifiableId
    And a dcql template asking for the family name of a VerifiableId as dc+sd-jwt
    And the dcql template sends its webhooks to the harness receiver
    And the application has opened a dcql session
    When the wallet presents to the dcql session misbehaving with kb-wrong-nonce
    Then the verifier refuses the dcql answer with HTTP 400 "invalid_presentation"
    And within 10 seconds the receiver got exactly one REJECT about the dcql session
    And the webhook errors name the sessionBinding check
