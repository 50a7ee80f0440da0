@auth
Feature: Login exchanges an API key for an access token
  A relying party logs in with its API key (HTTP Basic base64(id:secret)) and the headers tenant and
  ssiconfig, receives a JWT in the Token header (interface 4.1, 5.3) and sends it as
  "Authorization: jwt <token>" on later calls (5.4). Every credential failure gets one and the same
  answer, so a caller cannot learn which part was wrong. Each scenario works in a tenant of its own,
  provisioned through the portal, so revoking a key in one never disturbs another.

  Background:
    Given a tenant of our own

  @interface-4.1
  Scenario: A valid API key receives a JWT in the Token header, Token_type jwt and message SUCCESS
    When the application logs in naming its own template
    Then the answer is HTTP 200
    And the Token header holds a JWT
    And the Token_type header is "jwt"
    And the answer body is
      """json
      { "message": "SUCCESS" }
      """

  @interface-5
  Scenario: The access token from login authorizes a protected call
    Given the application has logged in
    When the application creates an offer with its token
    Then the answer is HTTP 201
    And the answer holds a credential_offer_uri

  @interface-4.1 @security
  Scenario: A wrong API key secret is refused with 401 invalid_credentials
    When the application logs in with a wrong secret
    Then the answer is a 401 problem "invalid_credentials"

  @interface-4.1 @security
  Scenario: An unknown API key id is refused with the same bytes as a wrong secret
    Given the application's login with a wrong secret was refused
    When a key id that does not exist logs in
    Then the answer is a 401 problem "invalid_credentials"
    And its body is byte-identical to the wrong-secret answer

  @interface-4.1 @security
  Scenario: An API key presented with another tenant's id is refused like a wrong secret
    Given the application's login with a wrong secret was refused
    When the application logs in with the tenant id of another tenant
    Then the answer is a 401 problem "invalid_credentials"
    And its body is byte-identical to the wrong-secret answer

  @interface-4.1 @security @needs-portal
  Scenario: A revoked API key can no longer log in and is refused like a wrong secret
    Given the application's login with a wrong secret was refused
    When the administrator revokes the application's key
    And the application logs in naming its own template
    Then the answer is a 401 problem "invalid_credentials"
    And its body is byte-identical to the wrong-secret answer

  @interface-4.1
  Scenario: A login without the tenant header is refused with 400 missing_header
    When the application logs in without the tenant header
    Then the answer is a 400 problem "missing_header"

  @interface-5
  Scenario: An application key linked to a template may not log in for another template
    When the application logs in naming another template of the tenant
    Then the answer is a 403 problem "template_not_allowed"

  @interface-5
  Scenario: An administrator key may name any template of its tenant
    When the administrator logs in naming another template of the tenant
    Then the answer is HTTP 200
    And the Token header holds a JWT

  @interface-5 @needs-portal
  Scenario: An application key without a linked template may name any template of its tenant
    When the unlinked application logs in naming another template of the tenant
    Then the answer is HTTP 200
    And the Token header holds a JWT

  @interface-5
  Scenario: A login naming a template the tenant does not have is refused with 403 template_not_allowed
    When the administrator logs in naming a template that does not exist
    Then the answer is a 403 problem "template_not_allowed"

  @interface-5 @security
  Scenario: A protected call without an Authorization header is refused with 401 unauthenticated
    When the application creates an offer without an Authorization header
    Then the answer is a 401 problem "unauthenticated"

  @interface-5 @security
  Scenario: An access token with a tampered signature is refused with 401 invalid_token
    Given the application has logged in
    When the application creates an offer with its token spoiled by a tampered signature
    Then the answer is a 401 problem "invalid_token"

  @interface-5 @security
  Scenario: An access token re-encoded with alg none is refused with 401 invalid_token
    Given the application has logged in
    When the application creates an offer with its token spoiled by alg none
    Then the answer is a 401 problem "invalid_token"

  @interface-5 @security
  Scenario: An access token signed by a key other than the service's is refused with 401 invalid_token
    Given the application has logged in
    When the application creates an offer with its token spoiled by a signature by another key
    Then the answer is a 401 problem "invalid_token"

  @interface-5 @security
  Scenario: An Authorization value that is not a JWT is refused with 401 invalid_token
    Given the application has logged in
    When the application creates an offer with its token spoiled by garbage
    Then the answer is a 401 problem "invalid_token"

  @interface-5 @security @needs-clock
  Scenario: An expired access token is refused with 401 token_expired
    Given the application has logged in
    When the application's token expires
    And the application creates an offer with its token
    Then the answer is a 401 problem "token_expired"

  @interface-5 @security @needs-portal
  Scenario: The access token of a revoked API key stops working at once with 401 invalid_token
    Given the application has logged in
    When the administrator revokes the application's key
    And the application creates an offer with its token
    Then the answer is a 401 problem "invalid_token"

  @interface-5
  Scenario: An application may not list issuance processes: 403 role_forbidden
    Given the application has logged in
    When the application lists the issuance processes
    Then the answer is a 403 problem "role_forbidden"

  @interface-5
  Scenario: An administrator may list issuance processes
    Given the administrator has logged in
    When the administrator lists the issuance processes
    Then the answer is HTTP 200
