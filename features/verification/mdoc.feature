@verification @mso-mdoc @needs-portal
Feature: A wallet presents an ISO mdoc to a dcql verification session over OpenID4VP 1.0
  A dcql template of format mso_mdoc asks for ISO/IEC 18013-5 mdocs (OpenID4VP 1.0 Appendix B.2): its DCQL
  query names the doctype (meta.doctype_value) and each element as [namespace, element]. The wallet answers
  with a DeviceResponse that discloses only those elements, device-signed over the SessionTranscript of this
  very exchange (client_id, nonce, response_uri and, for direct_post.jwt, the thumbprint of the session's
  encryption key). The service runs the named checks of the pipeline (docs/verification.md, "ISO mdoc
  presentations"): sessionBinding is the device signature over that SessionTranscript, credentialProof the
  IACA chain, issuerAuth's signature and the element digests, credentialStatus the MSO's Token Status List
  entry, matchingIds the doctype and the elements asked for. Every scenario creates its templates through the
  portal in a tenant of its own and uses the real simulated wallet over HTTP: a P-256 holder trusting the
  tenant's CA (for x509 client identifiers) and its IACA (the mdoc's issuer), whose default trust anchors
  include that IACA.

  Background:
    Given a tenant of our own with no template

  @OID4VP-1.0-B.2.3 @OID4VP-1.0-6
  Scenario: The DCQL query of an mdoc session names the doctype in meta.doctype_value and the element as [namespace, element]
    Given a dcql template asking for the family name of an mDL as mso_mdoc
    When the application opens a dcql session
    Then the DCQL query asks for one mso_mdoc credential of the mDL doctype and only its family_name element

  @OID4VP-1.0-B.2.6 @OID4VP-1.0-6.4.1
  Scenario Outline: An mDL presented to a verifier named by <prefix>, answered by <mode>, is VERIFIED with only the requested element disclosed
    Given the wallet holds an mDL
    And a dcql template asking for the family name of an mDL as mso_mdoc, its verifier named by <prefix>, answered by <mode>
    And the application has opened a dcql session
    When the wallet presents to the dcql session
    Then the wallet verified the request as the <prefix> client identifier prefix prescribes
    And the wallet answered by <mode>
    And the wallet disclosed only the family_name element of the mDL
    And the dcql session reads 200 VERIFIED with the wallet as subject, every named check passed and the submission format dcql
    And the dcql session shares only the family_name element of the mDL

    @OID4VP-1.0-8.2
    Examples: in the clear
      | prefix                   | mode        |
      | decentralized_identifier | direct_post |

    @OID4VP-1.0-8.3 @HAIP-1.0-5 @security
    Examples: HAIP, encrypted to the session's key
      | prefix    | mode            |
      | x509_hash | direct_post.jwt |

  @security
  Scenario Outline: An mdoc presentation with <defect> is rejected under <check>
    Given the wallet holds an mDL
    And a dcql template asking for the family name of an mDL as mso_mdoc
    And the application has opened a dcql session
    When the wallet presents to the dcql session misbehaving with <misbehaviour>
    Then the verifier refuses the dcql answer with HTTP 400 "invalid_presentation"
    And the dcql session reads 200 REJECTED with <check> failed naming "<element>"

    @OID4VP-1.0-B.2.6.1 @ISO18013-5-9.1.3.4
    Examples: the device signature over the SessionTranscript
      | defect                                                    | misbehaviour            | check          | element         |
      | a SessionTranscript of another nonce                      | mdoc-wrong-nonce        | sessionBinding | deviceSignature |
      | a SessionTranscript of the client_id without its prefix   | mdoc-wrong-client-id    | sessionBinding | deviceSignature |
      | a SessionTranscript of another response_uri               | mdoc-wrong-response-uri | sessionBinding | deviceSignature |
      | a device signature by a key other than the MSO's deviceKey | mdoc-foreign-device-key | sessionBinding | deviceSignature |

    @ISO18013-5-9.3.1
    Examples: the issuer-signed elements
      | defect                            | misbehaviour          | check           | element                       |
      | an element changed after issuance | mdoc-tampered-element | credentialProof | org.iso.18013.5.1/family_name |

  @OID4VP-1.0-6.4.1
  Scenario: An element disclosed beyond the DCQL query is reported as a warning naming it
    Given the wallet holds an mDL
    And a dcql template asking for the family name of an mDL as mso_mdoc
    And the application has opened a dcql session
    When the wallet presents to the dcql session misbehaving with mdoc-extra-element
    Then the wallet is told the dcql presentation was accepted
    And the dcql session reads 200 VERIFIED with a warning naming "org.iso.18013.5.1.given_name"

  @TokenStatusList-7 @security
  Scenario: An mDL the relying party has revoked is rejected under credentialStatus
    Given the wallet holds an mDL
    And the relying party has revoked the wallet's mDL
    And a dcql template asking for the family name of an mDL as mso_mdoc
    And the application has opened a dcql session
    When the wallet presents to the dcql session
    Then the verifier refuses the dcql answer with HTTP 400 "invalid_presentation"
    And the dcql session reads 200 REJECTED with credentialStatus failed naming "revoked"

  @ISO18013-5-9.3.1 @security
  Scenario: A template whose trust anchors leave out the tenant's IACA rejects its mDL under credentialProof
    Given the wallet holds an mDL
    And a dcql template asking for the family name of an mDL as mso_mdoc
    And the dcql template's trust anchors name only an IACA the tenant does not use
    And the application has opened a dcql session
    When the wallet presents to the dcql session
    Then the verifier refuses the dcql answer with HTTP 400 "invalid_presentation"
    And the dcql session reads 200 REJECTED with credentialProof failed naming "x5chain"
