@issuance
Feature: A wallet completes an offer over OpenID4VCI
  The relying party opens an offer (interface 4.2); the user's wallet scans the QR code, fetches the
  offer and the issuer metadata, redeems the pre-authorized code, proves possession of its key and
  receives a credential signed by the tenant's did:key issuer (OpenID4VCI, docs/issuance.md). Every
  scenario uses the real simulated wallet over HTTP, in a tenant of its own.

  Background:
    Given a tenant of our own

  @interface-2.6 @OID4VCI-4.1
  Scenario: The offer names the credential issuer, the template as configuration and a pre-authorized code
    Given the application has opened an offer
    When the wallet scans the offer
    Then the offer names the issuer, the template as configuration and a pre-authorized code

  @OID4VCI-12.2
  Scenario: The issuer metadata lists the credential, nonce, deferred and notification endpoints
    Given the application has opened an offer
    When the wallet scans the offer
    Then the issuer metadata lists the credential, nonce, deferred and notification endpoints

  @interface-4.4 @OID4VCI-8.3
  Scenario: Content submitted before the wallet asks is issued at once
    Given the application has opened an offer
    And the application has submitted the degree credential
    When the wallet completes the flow
    Then the wallet receives a UniversityDegreeCredential credential

  @interface-2.3 @interface-2.4
  Scenario: The holder DID is the validator's proof creator without its key fragment
    Given the application has opened an offer
    And the application has submitted the degree credential
    When the wallet completes the flow
    Then the process validator names the wallet's DID as holder
    And the process data holds the signed credential for the holder

  @OID4VCI-8.3
  Scenario Outline: A <key type> holder key receives a credential bound to it
    Given the application has opened an offer
    And the application has submitted the degree credential
    When a <key type> wallet completes the flow
    Then the <key type> wallet receives a UniversityDegreeCredential credential

    Examples:
      | key type  |
      | Ed25519   |
      | P-256     |
      | secp256k1 |

  @OID4VCI-6.1 @security
  Scenario: A pre-authorized code is redeemed once; a replay is refused with invalid_grant
    Given the application has opened an offer
    When the wallet scans the offer
    And the wallet redeems the pre-authorized code misbehaving with replayed-code
    Then the wallet is refused with HTTP 400 "invalid_grant"

  @OID4VCI-4.1.1 @needs-portal
  Scenario: An offer that asks for a transaction code announces it, and the relying party receives the code
    Given an offer for the tx_code template
    When the wallet scans the offer
    Then the offer announces a numeric transaction code of 6 characters
    And the offer response holds a tx_code of 6 digits

  @OID4VCI-6.3 @security @needs-portal
  Scenario: A wrong transaction code is refused with invalid_grant
    Given an offer for the tx_code template
    When the wallet scans the offer
    And the wallet redeems the pre-authorized code with the transaction code "000000"
    Then the wallet is refused with HTTP 400 "invalid_grant"

  @OID4VCI-6.3 @needs-portal
  Scenario: A missing transaction code is refused with invalid_request
    Given an offer for the tx_code template
    When the wallet scans the offer
    And the wallet redeems the pre-authorized code misbehaving with missing-tx-code
    Then the wallet is refused with HTTP 400 "invalid_request"

  @OID4VCI-F.4 @security
  Scenario Outline: A key proof with <defect> is refused with <error>
    Given the application has opened an offer
    When the wallet scans the offer
    And the wallet redeems the pre-authorized code
    And the wallet requests the credential misbehaving with <misbehaviour>
    Then the wallet is refused with HTTP 400 "<error>"
    And the process is PENDING

    Examples:
      | defect                              | misbehaviour         | error         |
      | a nonce the issuer never gave       | wrong-nonce          | invalid_nonce |
      | a signature that does not verify    | bad-signature        | invalid_proof |
      | another audience                    | wrong-aud            | invalid_proof |
      | an iat an hour old                  | expired-iat          | invalid_proof |
      | a kid naming someone else's key     | foreign-kid          | invalid_proof |
      | a private key in its header         | jwk-with-private-key | invalid_proof |
      | the wrong typ                       | wrong-typ            | invalid_proof |
      | alg none                            | alg-none             | invalid_proof |

  @OID4VCI-F.4 @security
  Scenario: A nonce is single use: a second request with the same nonce is refused with invalid_nonce
    Given the application has opened an offer
    And the wallet has requested the credential and was told to come back later
    And the application has opened an offer
    When the wallet scans the offer
    And the wallet redeems the pre-authorized code
    And the wallet requests the credential misbehaving with replayed-nonce
    Then the wallet is refused with HTTP 400 "invalid_nonce"

  @interface-2.4 @OID4VCI-F.2 @needs-portal
  Scenario: A template that requires an identity gets the shared VerifiableId in the validator
    Given the wallet already holds a VerifiableId
    And an offer for the template requiring an identity
    When the wallet scans the offer
    And the wallet redeems the pre-authorized code
    And the wallet requests the credential
    Then the offer asks the holder to present a VerifiableId
    And the wallet is told to come back later with a transaction id and an interval
    And the process validator holds the shared VerifiableId

  @interface-2.5 @OID4VCI-8.3.1 @needs-portal
  Scenario: A revoked VerifiableId does not satisfy a template that requires an identity: invalid_proof naming credentialStatus
    Given the wallet already holds a VerifiableId
    And the relying party has revoked the wallet's VerifiableId
    And an offer for the template requiring an identity
    When the wallet scans the offer
    And the wallet redeems the pre-authorized code
    And the wallet requests the credential
    Then the wallet is refused with HTTP 400 "invalid_proof" naming the check "credentialStatus"
    And the process is PENDING
