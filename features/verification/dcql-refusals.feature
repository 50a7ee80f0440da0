@verification @dcql @needs-portal
Feature: The dcql verifier refuses what OpenID4VP 1.0 and SD-JWT forbid, and the wallet refuses what it must
  Each scenario has the simulated wallet change exactly one thing of an otherwise correct OpenID4VP 1.0
  answer (src/wallet/README.md, "Misbehaviours"). The verifier answers the wallet with the wire status and
  OAuth code, and the relying party reads which named check failed (4.7). The reason is judged by the
  protocol element the failed check names (KB-JWT nonce, sd_hash, the vp_token key, …), never by the wording
  of a description, which another deployment phrases its own way. The wallet in turn refuses a request it
  must not answer, and nothing reaches the verifier.

  Background:
    Given a tenant of our own

  @security
  Scenario Outline: An SD-JWT VC presentation with <defect> is rejected under <check>
    Given the wallet holds an SD-JWT VC VerifiableId
    And a dcql template asking for the family name of a VerifiableId as dc+sd-jwt
    And the application has opened a dcql session
    When the wallet presents to the dcql session misbehaving with <misbehaviour>
    Then the verifier refuses the dcql answer with HTTP 400 "invalid_presentation"
    And the dcql session reads 200 REJECTED with <check> failed naming "<element>"

    @RFC9901-4.3 @OID4VP-1.0-B.3.6
    Examples: the key-binding JWT
      | defect                                              | misbehaviour     | check             | element        |
      | a KB-JWT sd_hash that is not the presented SD-JWT's | kb-wrong-sd-hash | presentationProof | KB-JWT sd_hash |
      | a KB-JWT nonce of no session                        | kb-wrong-nonce   | sessionBinding    | KB-JWT nonce   |
      | a KB-JWT aud without the client identifier prefix   | kb-wrong-aud     | sessionBinding    | KB-JWT aud     |
      | a KB-JWT issued an hour ago                         | kb-stale-iat     | sessionBinding    | KB-JWT iat     |
      | no KB-JWT at all                                    | kb-missing       | presentationProof | KB-JWT         |

    @RFC9901-7.1
    Examples: the disclosures
      | defect                              | misbehaviour           | check           | element    |
      | a disclosure altered after issuance | sd-tampered-disclosure | credentialProof | disclosure |

  @OID4VP-1.0-8.1 @security
  Scenario: A vp_token keyed by a credential query id the request does not have is rejected under matchingIds
    Given the wallet holds an SD-JWT VC VerifiableId
    And a dcql template asking for the family name of a VerifiableId as dc+sd-jwt
    And the application has opened a dcql session
    When the wallet presents to the dcql session misbehaving with vp-token-wrong-id
    Then the verifier refuses the dcql answer with HTTP 400 "invalid_presentation"
    And the dcql session reads 200 REJECTED with matchingIds failed naming "_unrequested"

  @OID4VP-1.0-8.3 @security
  Scenario: An answer in the clear to a session that asked for direct_post.jwt is refused and the session REJECTED under securityMechanisms
    Given the wallet holds an SD-JWT VC VerifiableId
    And a dcql template asking for the family name of a VerifiableId as dc+sd-jwt, its verifier named by decentralized_identifier, answered by direct_post.jwt
    And the application has opened a dcql session
    When the wallet presents to the dcql session misbehaving with plain-response
    Then the verifier refuses the dcql answer with HTTP 400 "invalid_request"
    And the dcql session reads 200 REJECTED with securityMechanisms failed naming "direct_post.jwt"

  @OID4VP-1.0-6.4.1
  Scenario: A claim disclosed beyond the DCQL query is reported as a warning naming it
    Given the wallet holds an SD-JWT VC VerifiableId
    And a dcql template asking for the family name of a VerifiableId as dc+sd-jwt
    And the application has opened a dcql session
    When the wallet presents to the dcql session misbehaving with sd-extra-disclosure
    Then the wallet is told the dcql presentation was accepted
    And the dcql session reads 200 VERIFIED with a warning naming "firstName"

  @OID4VP-1.0-B.1.3.1.5 @security
  Scenario Outline: A JWT VP of a jwt_vc_json credential with <defect> is rejected under <check>
    Given the wallet holds a jwt_vc_json degree credential
    And a dcql template asking for the degree name of a UniversityDegreeCredential as jwt_vc_json
    And the application has opened a dcql session
    When the wallet presents to the dcql session misbehaving with <misbehaviour>
    Then the verifier refuses the dcql answer with HTTP 400 "invalid_presentation"
    And the dcql session reads 200 REJECTED with <check> failed

    Examples:
      | defect                                          | misbehaviour        | check           |
      | a VP nonce of no session                        | vp-wrong-nonce      | sessionBinding  |
      | an audience other than the verifier's client_id | vp-wrong-aud        | sessionBinding  |
      | someone else's signature (a stolen credential)  | vp-foreign-key      | holderBinding   |
      | a credential altered after issuance             | tampered-credential | credentialProof |
      | a credential from an untrusted issuer           | untrusted-issuer    | trustedIssuer   |

  @OID4VP-1.0-8.5
  Scenario: A wallet that declines a dcql request answers access_denied and the session is REJECTED
    Given the wallet holds an SD-JWT VC VerifiableId
    And a dcql template asking for the family name of a VerifiableId as dc+sd-jwt
    And the application has opened a dcql session
    When the wallet presents to the dcql session misbehaving with access-denied
    Then the wallet is told its refusal of the dcql request was received
    And the dcql session reads 200 REJECTED with walletResponse failed

  @OID4VP-1.0-6
  Scenario: A wallet holding nothing the DCQL query accepts refuses by itself and the session stays open
    Given the wallet holds a jwt_vc_json degree credential
    And a dcql template asking for the family name of a VerifiableId as dc+sd-jwt
    And the application has opened a dcql session
    When the wallet presents to the dcql session
    Then the wallet refuses by itself because no credential matches the DCQL query
    And the dcql session reads 202 PENDING

  @OID4VP-1.0-5.9.3 @security
  Scenario Outline: A wallet that trusts <trust> refuses the request of a verifier named by <prefix> and sends nothing
    Given the wallet trusts <trust>
    And the wallet holds an SD-JWT VC VerifiableId
    And a dcql template asking for the family name of a VerifiableId as dc+sd-jwt, its verifier named by <prefix>
    And the application has opened a dcql session
    When the wallet presents to the dcql session
    Then the wallet refuses the request with "invalid_request" and sends nothing
    And the dcql session reads 202 PENDING

    Examples:
      | trust                                                | prefix       |
      | only a certificate authority the tenant does not use | x509_san_dns |
      | only a certificate authority the tenant does not use | x509_hash    |
      | no certificate authority                             | x509_san_dns |

  @security
  Scenario: A completed dcql session refuses another answer
    Given the wallet holds an SD-JWT VC VerifiableId
    And a dcql template asking for the family name of a VerifiableId as dc+sd-jwt
    And the application has opened a dcql session
    And the wallet has presented to the dcql session
    When the wallet answers the same dcql request again
    Then the verifier refuses the dcql answer with HTTP 409 "session_closed"

  @needs-clock @security
  Scenario: An expired dcql session refuses the answer and reads EXPIRED
    Given the wallet holds an SD-JWT VC VerifiableId
    And a dcql template asking for the family name of a VerifiableId as dc+sd-jwt
    And the application has opened a dcql session
    When the wallet fetches the dcql request
    And the dcql session expires
    And the wallet answers the dcql request anyway
    Then the verifier refuses the dcql answer with HTTP 410 "session_expired"
    And the dcql session reads 200 EXPIRED
