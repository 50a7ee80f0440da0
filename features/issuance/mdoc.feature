@issuance @mso-mdoc @needs-portal
Feature: ISO mdoc issuance over OpenID4VCI 1.0, signed under the tenant's IACA
  A template may issue its credential as an ISO/IEC 18013-5 mdoc (OpenID4VCI 1.0 Appendix A.2): the
  configuration names format mso_mdoc and its doctype, binds the device key as a COSE key and takes key
  proofs signed with ES256 only. The credential is a base64url IssuerSigned whose mobile security object
  (MSO) the tenant's document signer signs as issuerAuth, certified by the tenant's IACA root, which relying
  parties and wallets fetch at /oid4vci/<tenant>/iaca; its elements are the namespaces the application
  submitted (interface 4.4), each under a salted digest, its deviceKey is the key the wallet proved, and its
  status an entry of an IETF Token Status List that the relying party's revoke and suspend change. Every
  scenario creates the mDL template through the portal in a tenant of its own; the simulated wallet holds a
  P-256 key and trusts the IACA the tenant serves.

  Background:
    Given a tenant of our own with no template
    And the wallet trusts the IACA the tenant serves
    And an offer for the mDL template

  @OID4VCI-1.0-A.2
  Scenario: The mDL configuration names format mso_mdoc and its doctype, binds by cose_key, signs with COSE ES256 and takes ES256 key proofs only
    When a P-256 wallet scans the offer
    And the issuer metadata is read at its OpenID4VCI 1.0 location
    Then the mDL configuration has format mso_mdoc, the template's doctype, cose_key binding, COSE algorithm -7 and ES256 key proofs

  @OID4VCI-1.0-A.2 @OID4VCI-1.0-12.2.4
  Scenario: The elements an mDL configuration describes are addressed by namespace and element
    When a P-256 wallet scans the offer
    And the issuer metadata is read at its OpenID4VCI 1.0 location
    Then the claims of the mDL configuration are addressed by namespace and element

  @ISO18013-5-9.1.2.4 @ISO18013-5-B.1
  Scenario: An issued mDL's issuerAuth verifies to the IACA the tenant serves, through a document signer certificate of the Annex B profile
    Given the application has submitted the mDL
    When a P-256 wallet completes the flow
    Then the mDL's issuerAuth verifies to the IACA the tenant serves
    And the IACA and document signer certificates fit their ISO 18013-5 Annex B profiles

  @ISO18013-5-9.1.2.4 @OID4VCI-1.0-8.2
  Scenario: The deviceKey of an issued mDL's MSO is the key the wallet proved in its key proof
    Given the application has submitted the mDL
    When a P-256 wallet completes the flow
    Then the MSO's deviceKey is the wallet's key

  @interface-4.4 @OID4VCI-1.0-A.2
  Scenario: The elements of an issued mDL are the namespaces of the submitted credentialSubject
    Given the application has submitted the mDL
    When a P-256 wallet completes the flow
    Then the mDL's elements are the submitted namespaces, birth_date a full-date

  @ISO18013-5-9.1.2.5
  Scenario: Every element of an issued mDL hashes to its value digest in the MSO
    Given the application has submitted the mDL
    When a P-256 wallet completes the flow
    Then every element of the mDL hashes to its value digest in the MSO, each with its own digest ID and salt

  @OID4VCI-1.0-9 @OID4VCI-1.0-A.2
  Scenario: An mDL submitted after the credential request is collected from the deferred endpoint
    Given a P-256 wallet has requested the mDL and was told to come back later
    And the application submits the mDL
    When the wallet asks the deferred endpoint
    Then the wallet receives an mDL of the template's doctype

  @TokenStatusList-7 @interface-4.4
  Scenario Outline: An mDL the relying party has <change> reads <status> in the status list its MSO references
    Given the application has submitted the mDL
    And a P-256 wallet has received the mDL
    And the relying party has <change> the mDL
    When the mDL's status list is read
    Then the mDL reads <status> in its status list

    Examples:
      | change    | status    |
      | revoked   | INVALID   |
      | suspended | SUSPENDED |

  @OID4VCI-1.0-8.3.1.2 @security
  Scenario: A key proof signed with EdDSA for the mDL configuration, which takes ES256 proofs only, is refused with invalid_proof
    Given the application has submitted the mDL
    When an Ed25519 holder redeems the offer and requests the mDL with an EdDSA key proof
    Then the answer is a 400 OAuth error "invalid_proof"
    And the process is PENDING
