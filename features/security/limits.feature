@security @limits
Feature: Oversized and malformed input is refused before anything changes
  The interface leaves payload limits unspecified (section 8). vc-harness refuses relying-party bodies above
  bodyLimitBytes with 413 payload_too_large, unknown fields and unknown query parameters with 400 naming
  them, values of the wrong type without coercing them, bodies that are not JSON with 400 malformed_json or
  415 unsupported_media_type, and list pages above listMaxPageSize with 400 (docs/api.md, "Limits" and
  "Error codes"). The wallet-facing endpoints keep their own form-body limits (token 16 KiB, direct_post
  512 KiB) and answer in the OAuth error style. A refused request changes nothing, which each scenario
  reads back; a scenario that compares a tenant-wide list before and after needs a tenant no other
  scenario touches (@needs-portal). Sizes assume the defaults of the reference configuration:
  bodyLimitBytes 256 KiB, listMaxPageSize 200.

  Background:
    Given a tenant of our own

  # Body size

  @interface-8 @interface-4.2 @needs-portal
  Scenario: An offer request above the body limit is refused with 413 payload_too_large and opens no process
    Given the administrator has counted the PENDING processes
    When the application sends an offer request padded to 300 KiB
    Then the answer is a 413 problem "payload_too_large"
    And the tenant's PENDING processes are the same as before

  @interface-8 @interface-4.4
  Scenario: A submission above the body limit is refused with 413 payload_too_large and leaves the process unchanged
    Given the application has opened an offer
    And its application has read the process
    When the application sends a submission padded to 300 KiB
    Then the answer is a 413 problem "payload_too_large"
    And the process reads exactly as before

  @interface-8 @interface-2.1 @needs-portal
  Scenario: An API key request above the body limit is refused with 413 payload_too_large and creates no key
    Given the administrator has counted the API keys
    When the administrator sends an API key request padded to 300 KiB
    Then the answer is a 413 problem "payload_too_large"
    And the tenant's API keys are the same as before

  # Unknown fields and types

  @interface-4.2 @needs-portal
  Scenario: An unknown field in an offer request is refused with 400 validation_failed naming it, and opens no process
    Given the administrator has counted the PENDING processes
    When the application sends an offer request with the unknown field "callback"
    Then the answer is a 400 problem "validation_failed" naming the field "body/callback"
    And the tenant's PENDING processes are the same as before

  @interface-4.6 @needs-portal
  Scenario: An unknown field in a session request is refused with 400 validation_failed naming it
    When the unlinked application sends a session request with the unknown field "trustedIssuers"
    Then the answer is a 400 problem "validation_failed" naming the field "body/trustedIssuers"

  @interface-3
  Scenario: An unknown field in a rejection is refused with 400 validation_failed naming it, and the process is unchanged
    Given the application has opened an offer
    And its application has read the process
    When the application sends a rejection with the unknown field "notifyWallet"
    Then the answer is a 400 problem "validation_failed" naming the field "body/notifyWallet"
    And the process reads exactly as before

  @interface-2.1 @needs-portal
  Scenario: An unknown field in an API key request is refused with 400 validation_failed naming it, and creates no key
    Given the administrator has counted the API keys
    When the administrator sends an API key request with the unknown field "tenant"
    Then the answer is a 400 problem "validation_failed" naming the field "body/tenant"
    And the tenant's API keys are the same as before

  @interface-2.3 @interface-4.4
  Scenario: A credential object with an unknown top-level field is refused with 400 invalid_credential naming it
    Given the application has opened an offer
    And its application has read the process
    When the application sends a submission whose body is '[{"type": ["VerifiableCredential", "UniversityDegreeCredential"], "credentialSubject": {"degree": "BSc"}, "callbackUrl": "https://attacker.example"}]'
    Then the answer is a 400 problem "invalid_credential" naming the field "body/0/callbackUrl"
    And the process reads exactly as before

  @interface-4.2
  Scenario: A value of the wrong type is refused, never coerced: 400 validation_failed naming body/group
    When the application sends an offer request whose body is '{"group": 5}'
    Then the answer is a 400 problem "validation_failed" naming the field "body/group"

  # Body format

  @interface-4
  Scenario: A body that is not JSON is refused with 400 malformed_json
    When the application sends an offer request whose body is "group=degree"
    Then the answer is a 400 problem "malformed_json"

  @interface-4 @needs-portal
  Scenario: A JSON body carrying __proto__ is refused with 400 malformed_json
    Given the administrator has counted the PENDING processes
    When the application sends an offer request whose body is '{"group": "degree", "__proto__": {"role": "admin"}}'
    Then the answer is a 400 problem "malformed_json"
    And the tenant's PENDING processes are the same as before

  @interface-4
  Scenario Outline: A body sent as <content type> is refused with 415 unsupported_media_type
    When the application sends an offer request as "<content type>"
    Then the answer is a 415 problem "unsupported_media_type"

    Examples:
      | content type                    |
      | application/xml                 |
      | text/plain                      |
      | multipart/form-data; boundary=x |

  # Field lengths and counts

  @interface-8
  Scenario Outline: <Member> longer than <max> characters in <request> is refused with 400 validation_failed naming it
    Given the application has opened an offer
    When <caller> sends <request> whose <member> is <length> characters long
    Then the answer is a 400 problem "validation_failed" naming the field "body/<member>"

    @interface-4.2
    Examples: offers
      | Member     | max | caller          | request          | member | length |
      | A group    | 128 | the application | an offer request | group  | 129    |

    @interface-4.6 @needs-portal
    Examples: sessions
      | Member         | max | caller                   | request           | member      | length |
      | An ssiConfigId | 128 | the unlinked application | a session request | ssiConfigId | 129    |

    @interface-3
    Examples: rejections
      | Member   | max | caller          | request     | member | length |
      | A reason | 500 | the application | a rejection | reason | 501    |

    @interface-2.1
    Examples: API keys
      | Member  | max | caller            | request            | member | length |
      | A label | 200 | the administrator | an API key request | label  | 201    |

  @interface-8 @interface-4.4
  Scenario: A submission of more than 20 credentials is refused with 400 invalid_credential, and the process is unchanged
    Given the application has opened an offer
    And its application has read the process
    When the application submits 21 degree credentials
    Then the answer is a 400 problem "invalid_credential"
    And the process reads exactly as before

  # Listing (4.5)

  @interface-8 @interface-4.5
  Scenario Outline: A page size of <limit> is refused with 400 validation_failed naming querystring/limit
    When the administrator lists the processes with the query "limit=<limit>"
    Then the answer is a 400 problem "validation_failed" naming the field "querystring/limit"

    Examples:
      | limit |
      | 201   |
      | 0     |
      | ten   |

  @interface-4.5
  Scenario: An unknown query parameter is refused with 400 validation_failed naming it
    When the administrator lists the processes with the query "tenant=demo"
    Then the answer is a 400 problem "validation_failed" naming the field "querystring/tenant"

  @interface-4.5
  Scenario: A status outside PENDING, ISSUED and REJECTED is refused with 400 validation_failed naming it
    When the administrator lists the processes with the query "status=DONE"
    Then the answer is a 400 problem "validation_failed" naming the field "querystring/status"

  @interface-4.5
  Scenario: A cursor that is not one the service issued is refused with 400 invalid_cursor
    When the administrator lists the processes with the query "cursor=not-a-cursor"
    Then the answer is a 400 problem "invalid_cursor"

  @interface-4.5
  Scenario: A well-formed cursor the service never issued is refused with 400 invalid_cursor
    When the administrator lists the processes with the query "cursor=WzAsIngiXQ"
    Then the answer is a 400 problem "invalid_cursor"

  # Wallet-facing endpoints

  @interface-8 @OID4VCI-6.1
  Scenario: A token request above 16 KiB is refused with 400 invalid_request, and the code stays redeemable
    Given the application has opened an offer
    And the wallet scans the offer
    When the wallet sends its token request padded to 17 KiB
    Then the answer is a 400 OAuth error "invalid_request"
    And the wallet can still redeem the pre-authorized code

  @OID4VCI-6.1
  Scenario: A token request that is not form-encoded is refused with 400 invalid_request, and the code stays redeemable
    Given the application has opened an offer
    And the wallet scans the offer
    When the wallet sends its token request as JSON
    Then the answer is a 400 OAuth error "invalid_request"
    And the wallet can still redeem the pre-authorized code

  @interface-8 @OID4VP-6.2 @needs-portal
  Scenario: A direct_post response above 512 KiB is refused with 400 invalid_request, and the session stays PENDING
    Given the application has opened a verification session for the degree check
    When the wallet posts its refusal padded to 600 KiB
    Then the answer is a 400 OAuth error "invalid_request"
    And the session reads 202 PENDING

  @OID4VP-6.2 @needs-portal
  Scenario: A direct_post response that is not form-encoded is refused with 400 invalid_request, and the session stays PENDING
    Given the application has opened a verification session for the degree check
    When the wallet posts its refusal as JSON
    Then the answer is a 400 OAuth error "invalid_request"
    And the session reads 202 PENDING
