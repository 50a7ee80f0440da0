@issuance @attended
Feature: Attended issuance: an administrator completes what the wallet started
  Where a person must check what the holder shared, the wallet's credential request is answered with a
  transaction id; an administrator lists the PENDING processes (interface 4.5), reads the validator,
  submits the credential content (4.4) or rejects the process, and the wallet collects the outcome
  from the deferred credential endpoint.

  Background:
    Given a tenant of our own
    And the application has opened an offer

  @OID4VCI-8.3 @interface-3
  Scenario: Until content is submitted, the credential request answers 202 with a transaction id
    When the wallet scans the offer
    And the wallet redeems the pre-authorized code
    And the wallet requests the credential
    Then the wallet is told to come back later with a transaction id and an interval
    And the process is PENDING

  @OID4VCI-1.0-9.2
  Scenario: The deferred endpoint answers 202 with the same transaction id and an interval until the credential is submitted
    Given the wallet has requested the credential and was told to come back later
    When the wallet asks the deferred endpoint
    Then the wallet is told the credential is still pending

  @interface-4.5 @interface-2.4
  Scenario: The administrator finds the process among the PENDING ones, with what the wallet shared
    Given the wallet has requested the credential and was told to come back later
    When the administrator lists the PENDING processes
    Then the listed processes include this one with its validator

  @interface-4.4
  Scenario: The administrator's submission answers an array with the ISSUED process and its data
    Given the wallet has requested the credential and was told to come back later
    When the administrator submits the degree credential
    Then the submission answer is an array holding the ISSUED process with its data

  @interface-4.4 @OID4VCI-9
  Scenario: After the submission the wallet downloads the credential from the deferred endpoint
    Given the wallet has requested the credential and was told to come back later
    And the administrator submits the degree credential
    When the wallet asks the deferred endpoint
    Then the wallet receives a UniversityDegreeCredential credential

  @interface-4.4
  Scenario: A second submission to the same process is refused with 409 already_submitted
    Given the wallet has requested the credential and was told to come back later
    And the administrator submits the degree credential
    When the administrator submits the degree credential
    Then the answer is a 409 problem "already_submitted"

  @interface-2.3 @interface-4.4
  Scenario: A credential without credentialSubject is refused with 400 invalid_credential and nothing is stored
    Given the wallet has requested the credential and was told to come back later
    When the administrator submits a credential without credentialSubject
    Then the answer is a 400 problem "invalid_credential"
    And the process is PENDING

  @interface-3
  Scenario: A rejected process makes the deferred endpoint answer credential_request_denied
    Given the wallet has requested the credential and was told to come back later
    And the administrator rejects the process because "documents could not be verified"
    When the wallet asks the deferred endpoint
    Then the wallet is refused with HTTP 400 "credential_request_denied"

  @interface-3
  Scenario: A rejected process is REJECTED for the relying party
    Given the wallet has requested the credential and was told to come back later
    When the administrator rejects the process because "no match"
    Then the process is REJECTED
