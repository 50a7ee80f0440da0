@issuance
Feature: OpenID4VCI 1.0 Final: discovery, credential requests, and the wallets of earlier drafts
  A 1.0 wallet finds the credential issuer metadata with the well-known segment inserted after the host
  (1.0 §12.2.2) and the authorization server metadata the same way (RFC 8414 §3.1), and asks for a credential
  by configuration id with a list of proofs (1.0 §8.2). Wallets built on draft 15 (a singular proof) and on
  drafts 13/14 (a credential described by its format) are still served, mapped to the configuration their
  access token grants. A credential request without a key proof is invalid_proof (1.0 §8.3.1.2), and the
  access token may ask again (1.0 §8, §14.3): each further request, with a fresh nonce, gets a credential.

  Background:
    Given a tenant of our own
    And the application has opened an offer

  @OID4VCI-1.0-12.2.2
  Scenario: The credential issuer metadata is served at the well-known URI inserted after the host, naming the offer's credential issuer
    When the wallet scans the offer
    And the issuer metadata is read at its OpenID4VCI 1.0 location
    Then the metadata names the offer's credential issuer

  @OID4VCI-1.0-12.2.4
  Scenario: Every credential configuration carries credential_metadata
    When the wallet scans the offer
    And the issuer metadata is read at its OpenID4VCI 1.0 location
    Then every credential configuration carries credential_metadata

  @OID4VCI-1.0-12.3 @RFC8414-3
  Scenario: The authorization server metadata is served at its RFC 8414 well-known URI and names its issuer and token endpoint
    When the wallet scans the offer
    And the authorization server metadata is read at its RFC 8414 location
    Then the authorization server metadata names its issuer and a token endpoint

  @OID4VCI-1.0-8.2 @OID4VCI-1.0-8.3
  Scenario: A credential request with proofs is answered 200 with the credentials and a notification_id
    Given the application has submitted the degree credential
    When a wallet speaking OpenID4VCI 1.0 scans the offer
    And the wallet redeems the pre-authorized code
    And the wallet requests the credential
    Then the credential response holds the credentials and a notification_id

  @OID4VCI-8.2
  Scenario: A draft-15 wallet's credential request with a singular proof is still served
    Given the application has submitted the degree credential
    When a wallet speaking draft 15 scans the offer
    And the wallet redeems the pre-authorized code
    And the wallet requests the credential
    Then the wallet receives a UniversityDegreeCredential credential

  @OID4VCI-8.2
  Scenario: A singular proof from a wallet that otherwise speaks 1.0 is still served
    Given the application has submitted the degree credential
    When a wallet speaking OpenID4VCI 1.0 scans the offer
    And the wallet redeems the pre-authorized code
    And the wallet requests the credential misbehaving with legacy-proof
    Then the wallet receives a UniversityDegreeCredential credential

  @OID4VCI-draft13-7.2
  Scenario: A draft-13 format-based request is mapped to the configuration the access token grants
    Given the application has submitted the degree credential
    When a wallet speaking OpenID4VCI 1.0 scans the offer
    And the wallet redeems the pre-authorized code
    And the wallet requests the credential misbehaving with legacy-format-request
    Then the wallet receives a UniversityDegreeCredential credential

  @OID4VCI-draft13-7.2 @OID4VCI-1.0-8.3.1.2
  Scenario: A format-based request describing a credential the access token does not grant is refused with invalid_credential_request
    When a wallet speaking OpenID4VCI 1.0 scans the offer
    And the wallet redeems the pre-authorized code
    And the wallet requests another configuration of the issuer misbehaving with legacy-format-request
    Then the wallet is refused with HTTP 400 "invalid_credential_request"
    And the process is PENDING

  @OID4VCI-1.0-8.3.1.2
  Scenario: A credential request without a key proof is refused with invalid_proof
    When a wallet speaking OpenID4VCI 1.0 scans the offer
    And the wallet redeems the pre-authorized code
    And the wallet requests the credential misbehaving with missing-proof
    Then the wallet is refused with HTTP 400 "invalid_proof"
    And the process is PENDING

  @OID4VCI-1.0-8.3.1.2 @OID4VCI-1.0-14.3
  Scenario: A further credential request on the same access token without a key proof is refused with invalid_proof
    Given the application has submitted the degree credential
    When a wallet speaking OpenID4VCI 1.0 scans the offer
    And the wallet redeems the pre-authorized code
    And the wallet requests the credential
    And the wallet requests the credential again misbehaving with missing-proof
    Then the wallet is refused with HTTP 400 "invalid_proof"

  @OID4VCI-1.0-8 @OID4VCI-1.0-14.3
  Scenario: The wallet may ask again with the same access token and a fresh nonce, and gets another credential with its own notification_id
    Given the application has submitted the degree credential
    When a wallet speaking OpenID4VCI 1.0 scans the offer
    And the wallet redeems the pre-authorized code
    And the wallet requests the credential
    And the wallet requests the credential again
    Then the credential response holds the credentials and a notification_id
    And the further credential is another one for the wallet, with its own notification_id
    And the process is ISSUED

  @OID4VCI-1.0-14.3 @OID4VCI-1.0-8.3.1.2
  Scenario: A further credential request whose key proof reuses the nonce of the first is refused with invalid_nonce
    Given the application has submitted the degree credential
    When a wallet speaking OpenID4VCI 1.0 scans the offer
    And the wallet redeems the pre-authorized code
    And the wallet requests the credential
    And the wallet requests the credential again misbehaving with replayed-nonce
    Then the wallet is refused with HTTP 400 "invalid_nonce"

  @OID4VCI-1.0-14.3
  Scenario: While the credential is not issued yet, a further request on the same access token is answered with the same transaction id
    Given the wallet has requested the credential and was told to come back later
    When the wallet requests the credential again
    Then the wallet is told to come back later with the same transaction id
    And the process is PENDING

  @OID4VCI-1.0-14.3
  Scenario: After the deferred credential was collected, a further request on the same access token gets another credential
    Given the wallet has requested the credential and was told to come back later
    And the administrator submits the degree credential
    And the wallet asks the deferred endpoint
    When the wallet requests the credential again
    Then the credential response holds the credentials and a notification_id
    And the further credential is another one for the wallet, with its own notification_id
    And the process is ISSUED

  @OID4VCI-13.3
  Scenario: A draft-15 wallet may ask again with the same access token too
    Given the application has submitted the degree credential
    When a wallet speaking draft 15 scans the offer
    And the wallet redeems the pre-authorized code
    And the wallet requests the credential
    And the wallet requests the credential again
    Then the further credential is another one for the wallet, with its own notification_id
