@issuance @sd-jwt-vc
Feature: SD-JWT VC issuance over OpenID4VCI 1.0, with a Token Status List
  A template may issue its credential as an IETF SD-JWT VC (OpenID4VCI 1.0 Appendix A.3): the configuration
  names its format dc+sd-jwt and its vct; the credential is typed dc+sd-jwt, bound to the key that signed the
  key proof (cnf), its claims disclosed from what the application submitted (interface 4.4), and its status
  kept in an IETF Token Status List that the relying party's revoke and suspend change. Every scenario
  creates the SD-JWT VC template through the portal in a tenant of its own.

  Background:
    Given a tenant of our own
    And an offer for the SD-JWT VC template

  @OID4VCI-1.0-A.3 @needs-portal
  Scenario: The SD-JWT VC configuration has format dc+sd-jwt and names its vct
    When the wallet scans the offer
    And the issuer metadata is read at its OpenID4VCI 1.0 location
    Then the SD-JWT VC configuration has format dc+sd-jwt and the template's vct

  @OID4VCI-1.0-12.2.4 @OID4VCI-1.0-C @needs-portal
  Scenario: The claims a configuration describes are addressed by claims path pointers
    When the wallet scans the offer
    And the issuer metadata is read at its OpenID4VCI 1.0 location
    Then the claims of the SD-JWT VC configuration are addressed by claims path pointers

  @SD-JWT-VC-3.2 @needs-portal
  Scenario: An issued SD-JWT VC is explicitly typed dc+sd-jwt
    Given the application has submitted the degree credential
    When the wallet completes the flow
    Then the SD-JWT VC is typed dc+sd-jwt

  @SD-JWT-VC-3.2 @OID4VCI-1.0-A.3 @needs-portal
  Scenario: An issued SD-JWT VC carries the vct of its credential configuration
    Given the application has submitted the degree credential
    When the wallet completes the flow
    Then the SD-JWT VC carries the template's vct

  @SD-JWT-VC-3.2 @OID4VCI-1.0-8.2 @needs-portal
  Scenario: An issued SD-JWT VC is bound to the key that signed the key proof (cnf.jwk)
    Given the application has submitted the degree credential
    When the wallet completes the flow
    Then the SD-JWT VC is bound to the wallet's key

  @SD-JWT-VC-3.2 @needs-portal
  Scenario: An issued SD-JWT VC verifies against its issuer's did:key, every disclosure referenced by a digest
    Given the application has submitted the degree credential
    When the wallet completes the flow
    Then the SD-JWT VC verifies against its issuer's did:key

  @interface-4.4 @OID4VCI-1.0-A.3 @needs-portal
  Scenario: The disclosed claims of an issued SD-JWT VC are the submitted credentialSubject
    Given the application has submitted the degree credential
    When the wallet completes the flow
    Then the SD-JWT VC discloses the submitted credentialSubject

  @TokenStatusList-5 @TokenStatusList-6 @needs-portal
  Scenario: The status list an SD-JWT VC references is a statuslist+jwt of its issuer whose sub is the referenced uri
    Given the application has submitted the degree credential
    And the wallet holds the SD-JWT VC
    When the SD-JWT VC's status list is read
    Then the status list is a statuslist+jwt of the credential's issuer whose sub is the referenced uri

  @TokenStatusList-7 @needs-portal
  Scenario: A newly issued SD-JWT VC reads VALID in its status list
    Given the application has submitted the degree credential
    And the wallet holds the SD-JWT VC
    When the SD-JWT VC's status list is read
    Then the SD-JWT VC reads VALID in its status list

  @TokenStatusList-7 @interface-4.4 @needs-portal
  Scenario Outline: An SD-JWT VC the relying party has <change> reads <status> in its status list
    Given the application has submitted the degree credential
    And the wallet holds the SD-JWT VC
    And the relying party has <change> the SD-JWT VC
    When the SD-JWT VC's status list is read
    Then the SD-JWT VC reads <status> in its status list

    Examples:
      | change    | status    |
      | revoked   | INVALID   |
      | suspended | SUSPENDED |

  @OID4VCI-1.0-F.4 @OID4VCI-1.0-8.3.1.2 @security @needs-portal
  Scenario Outline: A key proof for an SD-JWT VC with <defect> is refused with <error>
    When the wallet scans the offer
    And the wallet redeems the pre-authorized code
    And the wallet requests the credential misbehaving with <misbehaviour>
    Then the wallet is refused with HTTP 400 "<error>"
    And the process is PENDING

    Examples:
      | defect                          | misbehaviour | error         |
      | a kid naming someone else's key | foreign-kid  | invalid_proof |
      | a nonce the issuer never gave   | wrong-nonce  | invalid_nonce |

  @OID4VCI-1.0-F.4 @OID4VCI-1.0-8.3.1.2 @security @needs-portal
  Scenario: A nonce already used for an SD-JWT VC is refused with invalid_nonce
    Given the application has submitted the degree credential
    And the wallet holds the SD-JWT VC
    And an offer for the SD-JWT VC template
    When the wallet scans the offer
    And the wallet redeems the pre-authorized code
    And the wallet requests the credential misbehaving with replayed-nonce
    Then the wallet is refused with HTTP 400 "invalid_nonce"

  @OID4VCI-1.0-9.2 @OID4VCI-1.0-A.3 @needs-portal
  Scenario: An SD-JWT VC submitted after the credential request is collected from the deferred endpoint
    Given the wallet has requested the credential and was told to come back later
    And the administrator submits the degree credential
    When the wallet asks the deferred endpoint
    Then the wallet receives an SD-JWT VC of the template's vct

  @OID4VCI-draft13-7.2 @needs-portal
  Scenario: A format-based request naming dc+sd-jwt and the vct is mapped to the granted SD-JWT VC configuration
    Given the application has submitted the degree credential
    When the wallet scans the offer
    And the wallet redeems the pre-authorized code
    And the wallet requests the credential misbehaving with legacy-format-request
    Then the wallet receives an SD-JWT VC of the template's vct
