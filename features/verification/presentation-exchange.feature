@verification @needs-portal
Feature: A wallet answers a verification session over OpenID4VP with Presentation Exchange
  The relying party opens a verification session (interface 4.6) and shows its authentication request as
  a QR code; the user's wallet fetches the signed request object, selects matching credentials, signs a
  presentation with its holder key and posts it (direct_post). The service checks everything a careful
  verifier must and the relying party reads the outcome (4.7, docs/verification.md). Every scenario uses
  the real simulated wallet over HTTP, in a tenant of its own.

  Background:
    Given a tenant of our own

  @interface-4.6 @interface-2.7
  Scenario: A session's authentication request is an openid-vp link whose paths end with the session id
    When the application opens a verification session for the degree check
    Then the authentication request is an openid-vp link with client_id, redirect_uri, request_uri, response_mode direct_post, response_type vp_token and scope openid
    And the session id is the definition id and the last path segment of request_uri and redirect_uri

  @interface-2.8
  Scenario: The presentation definition has the shape of section 2.8
    When the application opens a verification session for the degree check
    Then the presentation definition carries a data agreement, jwt and ldp formats, a mandatory requirement and one descriptor per requested type

  @interface-2.8 @security
  Scenario: A descriptor asks for the type, trusts only the tenant's issuers and requires an active status
    Given the wallet holds a degree credential
    When the application opens a verification session for the degree check
    Then the descriptor matches the type's last element, trusts only the tenant's issuer DIDs and requires an active status

  @interface-4.7 @interface-2.9
  Scenario: A session nobody answered reads 202 with nothing submitted
    Given the application has opened a verification session for the degree check
    Then the session reads 202 PENDING
    And nothing has been submitted to the session yet

  @OID4VP-5.7 @OID4VP-5.10 @security
  Scenario: The request object is signed by the verifier's DID and carries a fresh nonce
    Given the application has opened a verification session for the degree check
    When the wallet fetches the request
    Then the request object is signed by the client_id DID, typed, and carries a nonce of at least 128 bits
    And the session records when the wallet fetched the request

  @OID4VP-6.2 @OID4VP-7.2 @interface-4.7
  Scenario: A holder presents its degree and the session reads VERIFIED with what was shared
    Given the wallet holds a degree credential
    And the application has opened a verification session for the degree check
    When the wallet presents
    Then the wallet is told the presentation was accepted
    And the session reads 200 VERIFIED with the wallet as subject and every check passed
    And the session shares the degree claims without the subject id

  @OID4VP-7.2
  Scenario Outline: A <key type> holder key presents and is verified
    Given a <key type> wallet holds a degree credential
    And the application has opened a verification session for the degree check
    When the <key type> wallet presents
    Then the session reads 200 VERIFIED for the <key type> wallet

    Examples:
      | key type  |
      | Ed25519   |
      | P-256     |
      | secp256k1 |

  @PEX-submission-requirements
  Scenario: A pick group is satisfied by one of its credentials
    Given the wallet holds a degree credential and a VerifiableId
    And the application has opened a verification session for the degree and identity check
    When the wallet presents
    Then the definition lets the holder pick at least one identity credential
    And the session reads 200 VERIFIED with the wallet as subject and every check passed

  @PEX-input-evaluation
  Scenario: A wallet without a matching credential refuses by itself and the session stays open
    Given the wallet holds only a VerifiableId
    And the application has opened a verification session for the degree check
    When the wallet presents
    Then the wallet refuses by itself because nothing matches "UniversityDegreeCredential"
    And the session reads 202 PENDING

  @security @OID4VP-7.2
  Scenario Outline: The verifier rejects a presentation with <defect>, naming the <check> check
    Given the wallet holds a degree credential
    And the application has opened a verification session for the degree check
    When the wallet presents misbehaving with <misbehaviour>
    Then the verifier refuses the wallet with HTTP 400 "invalid_presentation"
    And the session reads 200 REJECTED with <check> failed

    Examples:
      | defect                                    | misbehaviour        | check             |
      | another session's nonce                   | vp-wrong-nonce      | sessionBinding    |
      | an audience other than the verifier       | vp-wrong-aud        | sessionBinding    |
      | someone else's signature (a stolen credential) | vp-foreign-key | holderBinding |
      | a credential altered after issuance       | tampered-credential | credentialProof   |
      | a credential from an untrusted issuer     | untrusted-issuer    | trustedIssuer     |
      | a submission that lies about its mapping  | lying-submission    | matchingIds       |

  @security @BitstringStatusList
  Scenario: A revoked credential is rejected by its status list
    Given the wallet holds a degree credential
    And the relying party has revoked that credential
    And the application has opened a verification session for the degree check
    When the wallet presents misbehaving with revoked-credential
    Then the verifier refuses the wallet with HTTP 400 "invalid_presentation"
    And the session reads 200 REJECTED with credentialStatus failed

  @security @BitstringStatusList
  Scenario: A suspended credential is rejected by its status list
    Given the wallet holds a degree credential
    And the relying party has suspended that credential
    And the application has opened a verification session for the degree check
    When the wallet presents
    Then the verifier refuses the wallet with HTTP 400 "invalid_presentation"
    And the session reads 200 REJECTED with credentialStatus failed

  @OID4VP-6.4
  Scenario: A wallet that declines answers with an error and the session is REJECTED
    Given the wallet holds a degree credential
    And the application has opened a verification session for the degree check
    When the wallet presents misbehaving with access-denied
    Then the wallet is told its refusal was received
    And the session reads 200 REJECTED with walletResponse failed

  @security @OID4VP-7.2
  Scenario: A vp_token replayed into another session fails its session binding
    Given the wallet holds a degree credential
    And the wallet has presented to a first session
    And the application has opened a verification session for the degree check
    When the wallet presents misbehaving with vp-replayed
    Then the verifier refuses the wallet with HTTP 400 "invalid_presentation"
    And the session reads 200 REJECTED with sessionBinding failed

  @security
  Scenario: A completed session refuses another answer
    Given the wallet holds a degree credential
    And the wallet has presented to a first session
    When the wallet presents to that session again
    Then the verifier refuses the wallet with HTTP 409 "session_closed"

  @needs-clock @security
  Scenario: An expired session refuses the answer and reads EXPIRED
    Given the wallet holds a degree credential
    And the application has opened a verification session for the degree check
    When the wallet fetches the request
    And the session expires
    And the wallet answers anyway
    Then the verifier refuses the wallet with HTTP 410 "session_expired"
    And the session reads 200 EXPIRED

  @security @interface-5
  Scenario: An administrator may not open a verification session
    When the administrator opens a verification session
    Then the answer is a 403 problem "role_forbidden"

  @security @interface-5
  Scenario: Another tenant's application cannot read the session
    Given the application has opened a verification session for the degree check
    When an application of another tenant reads the session
    Then the answer is a 404 problem "session_not_found"
