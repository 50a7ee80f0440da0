@verification @dc-api @needs-portal
Feature: A wallet answers a dcql verification session over the W3C Digital Credentials API
  A dcql template with dcql.dcApi offers each session over the W3C Digital Credentials API too (OpenID4VP 1.0
  Appendix A): the relying party's page GETs the session's DC API request (the {protocol, data} entry it hands
  navigator.credentials.get), unsigned (openid4vp-v1-unsigned), a request object in JWS Compact Serialization
  (openid4vp-v1-signed) or a JWS JSON Serialization with one signature per client identifier
  (openid4vp-v1-multisigned). The platform hands the wallet the entry and the page's origin; the wallet checks a
  signed request's expected_origins against that origin, binds every presentation to origin:<origin> (an mdoc
  to the OpenID4VPDCAPIHandover of the origin) and answers through the API ({vp_token} for dc_api, {response:
  <JWE>} for dc_api.jwt). The page's backend POSTs the DigitalCredential with the origin of the page that asked
  to the session's DC API response URL: 200 when verified, 400 invalid_presentation when rejected (the check
  named in 4.7), 400 invalid_request when it cannot be read (the session stays PENDING). Every scenario creates
  its templates through the portal in a tenant of its own, with the relying party's page at the expected
  origin https://rp.example, and uses the real simulated wallet in place of the platform: a P-256 holder
  trusting the tenant's CA (for x509 client identifiers) and, holding an mDL, its IACA.

  Background:
    Given a tenant of our own

  @interface-4.6 @OID4VP-1.0-A.1
  Scenario Outline: The 4.6 answer of a dcql template offered over the DC API with <request> requests names the protocol <protocol>, the session's DC API URL and the expected origins
    Given a DC API template asking for the family name of a VerifiableId as dc+sd-jwt with <request> requests
    When the application opens a dcql session
    Then the 4.6 answer offers the session over the DC API as <protocol> at the session's own URL, expecting the relying party's origin
    And the relying party's page gets an entry of protocol <protocol> from the session's DC API URL

    Examples:
      | request     | protocol                 |
      | unsigned    | openid4vp-v1-unsigned    |
      | signed      | openid4vp-v1-signed      |
      | multisigned | openid4vp-v1-multisigned |

  @OID4VP-1.0-A.2
  Scenario Outline: The <request> DC API request of a verifier named by <prefix>, answered by <mode>, carries the parameters of Appendix A.2 as its protection prescribes
    Given a DC API template asking for the family name of a VerifiableId as dc+sd-jwt with <request> requests, its verifier named by <prefix>, answered by <mode>
    And the application has opened a dcql session
    When the relying party's page gets the DC API request
    Then the DC API request asks for a vp_token with response_mode <dc mode>, the session's nonce and DCQL query, and no state or response_uri
    And the DC API request is <request> as Appendix A.3 prescribes, its signatures verifying as its client identifier prefixes prescribe

    @OID4VP-1.0-A.3.1
    Examples: unsigned: the parameters as they are, no client_id, no expected_origins
      | request  | prefix                   | mode            | dc mode    |
      | unsigned | decentralized_identifier | direct_post     | dc_api     |
      | unsigned | decentralized_identifier | direct_post.jwt | dc_api.jwt |

    @OID4VP-1.0-A.3.2.1
    Examples: signed: a request object with client_id and expected_origins
      | request | prefix                   | mode            | dc mode    |
      | signed  | decentralized_identifier | direct_post     | dc_api     |
      | signed  | x509_hash                | direct_post.jwt | dc_api.jwt |

    @OID4VP-1.0-A.3.2.2
    Examples: multi-signed: client_id only in each signature's protected header
      | request     | prefix                   | mode        | dc mode |
      | multisigned | decentralized_identifier | direct_post | dc_api  |

  @OID4VP-1.0-A.4 @OID4VP-1.0-B.3.6
  Scenario Outline: An SD-JWT VC presented to a template with <request> DC API requests, answered by <dc mode>, is VERIFIED with its KB-JWT bound to the page's origin
    Given the wallet holds an SD-JWT VC VerifiableId
    And a DC API template asking for the family name of a VerifiableId as dc+sd-jwt with <request> requests, answered by <mode>
    And the application has opened a dcql session
    When the wallet answers the DC API request on the relying party's page
    And the relying party posts the wallet's answer with the origin of that page
    Then the wallet answered through the DC API by <dc mode>, under the request's protocol
    And the KB-JWT the wallet presented is bound to origin:https://rp.example and the session's nonce
    And the relying party is told the DC API answer was verified
    And the dcql session reads 200 VERIFIED with the wallet as subject, every named check passed and the submission format dcql
    And the dcql session shares only the requested claim

    @OID4VP-1.0-A.3.1
    Examples: unsigned
      | request  | mode        | dc mode |
      | unsigned | direct_post | dc_api  |

    @OID4VP-1.0-A.3.2.1
    Examples: signed
      | request | mode        | dc mode |
      | signed  | direct_post | dc_api  |

    @OID4VP-1.0-A.3.2.2
    Examples: multi-signed
      | request     | mode        | dc mode |
      | multisigned | direct_post | dc_api  |

    @OID4VP-1.0-8.3 @security
    Examples: encrypted to the session's key
      | request | mode            | dc mode    |
      | signed  | direct_post.jwt | dc_api.jwt |

  @OID4VP-1.0-B.2.6.2 @OID4VP-1.0-A.3.2.1 @OID4VP-1.0-8.3 @security
  Scenario: An mDL presented over a signed DC API request of a verifier named by x509_hash, answered by dc_api.jwt, is VERIFIED under the DC API handover
    Given the wallet holds an mDL
    And a DC API template asking for the family name of an mDL as mso_mdoc with signed requests, its verifier named by x509_hash, answered by direct_post.jwt
    And the application has opened a dcql session
    When the wallet answers the DC API request on the relying party's page
    And the relying party posts the wallet's answer with the origin of that page
    Then the wallet answered through the DC API by dc_api.jwt, under the request's protocol
    And the relying party is told the DC API answer was verified
    And the dcql session reads 200 VERIFIED with the wallet as subject, every named check passed and the submission format dcql
    And the dcql session shares only the family_name element of the mDL

  @security
  Scenario Outline: A DC API answer <defect> is rejected under <check>
    Given the wallet holds <credential>
    And a DC API template asking for the <ask> with <request> requests, answered by <mode>
    And the application has opened a dcql session
    When the wallet answers the DC API request on <page> misbehaving with <misbehaviour>
    And the relying party posts the wallet's answer with the origin of that page
    Then the relying party is refused with HTTP 400 "invalid_presentation"
    And the dcql session reads 200 REJECTED with <check> failed naming "<element>"

    @OID4VP-1.0-A.4
    Examples: bound to something else than the page's origin
      | defect                                          | credential               | ask                                          | request  | mode        | page                     | misbehaviour              | check          | element    |
      | bound to another origin than the page's         | an SD-JWT VC VerifiableId | family name of a VerifiableId as dc+sd-jwt  | signed   | direct_post | the relying party's page | dc-api-foreign-origin     | sessionBinding | KB-JWT aud |
      | bound to the client_id instead of the origin    | an SD-JWT VC VerifiableId | family name of a VerifiableId as dc+sd-jwt  | signed   | direct_post | the relying party's page | dc-api-client-id-audience | sessionBinding | KB-JWT aud |
      | bound to the origin without its origin: prefix  | an SD-JWT VC VerifiableId | family name of a VerifiableId as dc+sd-jwt  | unsigned | direct_post | the relying party's page | dc-api-client-id-audience | sessionBinding | KB-JWT aud |

    @OID4VP-1.0-B.2.6.2
    Examples: an mdoc under the DC API handover of another origin
      | defect                                         | credential | ask                                 | request | mode        | page                     | misbehaviour          | check          | element                |
      | with an mdoc device-signed for another origin  | an mDL     | family name of an mDL as mso_mdoc   | signed  | direct_post | the relying party's page | dc-api-foreign-origin | sessionBinding | OpenID4VPDCAPIHandover |

    @OID4VP-1.0-A.5
    Examples: made for another request
      | defect                                | credential               | ask                                         | request | mode        | page                     | misbehaviour         | check          | element      |
      | made for another request (its nonce)  | an SD-JWT VC VerifiableId | family name of a VerifiableId as dc+sd-jwt | signed  | direct_post | the relying party's page | dc-api-wrong-request | sessionBinding | KB-JWT nonce |

    @OID4VP-1.0-A.2 @OID4VP-1.0-A.4
    Examples: posted from a page the template does not expect
      | defect                                                                    | credential               | ask                                         | request | mode        | page                                       | misbehaviour                   | check          | element               |
      | posted from an origin the template does not expect (the wallet ignored expected_origins) | an SD-JWT VC VerifiableId | family name of a VerifiableId as dc+sd-jwt | signed  | direct_post | a page of an origin the template does not expect | dc-api-ignore-expected-origins | sessionBinding | https://phish.example |

    @OID4VP-1.0-A.2 @OID4VP-1.0-8.3
    Examples: a vp_token in the clear to a session that asked for dc_api.jwt
      | defect                                      | credential               | ask                                         | request | mode            | page                     | misbehaviour   | check              | element    |
      | in the clear where dc_api.jwt was asked for | an SD-JWT VC VerifiableId | family name of a VerifiableId as dc+sd-jwt | signed  | direct_post.jwt | the relying party's page | plain-response | securityMechanisms | dc_api.jwt |

    @OID4VP-1.0-A.4 @OID4VP-1.0-8.5
    Examples: the wallet's error answer through the API
      | defect                             | credential               | ask                                         | request  | mode        | page                     | misbehaviour  | check          | element       |
      | carrying the wallet's access_denied | an SD-JWT VC VerifiableId | family name of a VerifiableId as dc+sd-jwt | unsigned | direct_post | the relying party's page | access-denied | walletResponse | access_denied |

  @OID4VP-1.0-8.3 @OID4VP-1.0-A.2 @security
  Scenario: A dc_api.jwt answer that does not decrypt with the session's key is refused with 400 invalid_request and the session stays PENDING
    Given the wallet holds an SD-JWT VC VerifiableId
    And a DC API template asking for the family name of a VerifiableId as dc+sd-jwt with signed requests, answered by direct_post.jwt
    And the application has opened a dcql session
    When the wallet answers the DC API request on the relying party's page misbehaving with jwe-wrong-key
    And the relying party posts the wallet's answer with the origin of that page
    Then the relying party is refused with HTTP 400 "invalid_request"
    And the dcql session reads 202 PENDING

  @OID4VP-1.0-A.5 @security
  Scenario: A dcql session verified over the DC API refuses a second answer with 409 session_closed
    Given the wallet holds an SD-JWT VC VerifiableId
    And a DC API template asking for the family name of a VerifiableId as dc+sd-jwt with signed requests
    And the application has opened a dcql session
    And the wallet has answered the DC API request on the relying party's page and the answer was verified
    When the relying party posts the wallet's answer with the origin of that page again
    Then the relying party is refused with HTTP 409 "session_closed"
    And the dcql session reads 200 VERIFIED with the wallet as subject, every named check passed and the submission format dcql

  @OID4VP-1.0-A.2 @security
  Scenario: The wallet refuses a signed DC API request whose expected_origins leave out the calling origin, and answers nothing
    Given the wallet holds an SD-JWT VC VerifiableId
    And a DC API template asking for the family name of a VerifiableId as dc+sd-jwt with signed requests
    And the application has opened a dcql session
    When the wallet answers the DC API request on a page of an origin the template does not expect
    Then the wallet refuses the DC API request with "invalid_request" and presents nothing
    And the dcql session reads 202 PENDING

  @OID4VP-1.0-A.3.2.2 @security
  Scenario: The wallet answers a multi-signed DC API request one of whose signatures is corrupted, by the client identifier whose signature verifies
    Given the wallet holds an SD-JWT VC VerifiableId
    And a DC API template asking for the family name of a VerifiableId as dc+sd-jwt with multisigned requests
    And the application has opened a dcql session
    And the relying party's page gets the DC API request
    And the first signature of the multi-signed DC API request is corrupted
    When the wallet answers the DC API request on the relying party's page
    And the relying party posts the wallet's answer with the origin of that page
    Then the wallet found the first signature invalid and verified the other one, naming the verifier by its client_id
    And the relying party is told the DC API answer was verified
    And the dcql session reads 200 VERIFIED with the wallet as subject, every named check passed and the submission format dcql
