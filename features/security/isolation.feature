@security @isolation
Feature: Tenants are isolated, and every role keeps to its calls
  A tenant's processes, sessions, API keys and templates exist for that tenant only: to any other tenant
  they answer exactly like ids that do not exist (docs/api.md, "Roles and isolation"). Inside a tenant an
  application acts only on the processes and sessions of its template, an administrator validates and
  manages but neither opens offers nor reads single processes (interface 5.5), and only an operator
  creates tenants. A refused call changes nothing, which each scenario reads back from the owner's side.

  Each scenario works in a tenant of its own, provisioned through the portal (scenarios that only check a
  role also run in the configured tenant of a target without one). "Another tenant" is the tenant the
  target is configured with: its keys are known and its template ids are the very ids of ours (degree,
  degree-check), so only the tenant can tell the two apart (@needs-portal).

  Background:
    Given a tenant of our own

  # Issuance processes (4.3, 4.4, 4.5)

  @interface-4.3 @interface-5 @needs-portal
  Scenario: Another tenant's application reading a process gets 404 process_not_found, exactly like an unknown id
    Given the application has opened an offer
    And another tenant's application has read a process id that does not exist
    When another tenant's application tries to read the process
    Then the answer is a 404 problem "process_not_found"
    And its body is the unknown-id answer but for the id it echoes

  @needs-portal
  Scenario Outline: Another tenant's <caller> cannot <action> the process: 404 process_not_found, and the process is unchanged
    Given the application has opened an offer
    And its application has read the process
    When another tenant's <caller> tries to <action> the process
    Then the answer is a 404 problem "process_not_found"
    And the process reads exactly as before

    @interface-4.4 @interface-5
    Examples: submitting content
      | caller        | action                          |
      | application   | submit the degree credential to |
      | administrator | submit the degree credential to |

    @interface-3 @interface-5
    Examples: rejecting
      | caller        | action |
      | application   | reject |
      | administrator | reject |

  @interface-5 @BitstringStatusList @needs-portal
  Scenario: Another tenant's administrator cannot revoke an issued credential: 404 process_not_found, and the credential stays live
    Given the wallet holds a degree credential
    When another tenant's administrator tries to revoke the credentials of the process
    Then the answer is a 404 problem "process_not_found"
    And its application can still suspend the credential

  @interface-4.5 @needs-portal
  Scenario: Another tenant's administrator does not see the process among its PENDING ones
    Given the application has opened an offer
    And another tenant's application has opened an offer
    When another tenant's administrator lists the PENDING processes
    Then the list holds the other tenant's process but not this one

  @interface-5 @needs-portal
  Scenario Outline: An application linked to another template cannot <action> a process: 403 process_not_linked
    Given an offer for the tx_code template
    And its application has read the process
    When the application tries to <action> the process
    Then the answer is a 403 problem "process_not_linked"
    And the process reads exactly as before

    @interface-4.3
    Examples: reading
      | action |
      | read   |

    @interface-4.4
    Examples: submitting content
      | action                          |
      | submit the degree credential to |

    @interface-3
    Examples: rejecting
      | action |
      | reject |

  @interface-4.3 @interface-5
  Scenario: An administrator may not read a single process: 403 role_forbidden
    Given the application has opened an offer
    When the administrator tries to read the process
    Then the answer is a 403 problem "role_forbidden"

  @interface-4.2 @interface-5 @needs-portal
  Scenario: An administrator may not open an offer: 403 role_forbidden, and no process is opened
    Given the administrator has counted the PENDING processes
    When the administrator tries to open an offer
    Then the answer is a 403 problem "role_forbidden"
    And the tenant's PENDING processes are the same as before

  # Verification sessions (4.7) and the wallet-facing endpoints

  @interface-4.7 @interface-5 @needs-portal
  Scenario: An application linked to another template cannot read a session: 403 session_not_linked
    Given the application has opened a verification session for the degree check
    When the application tries to read the session
    Then the answer is a 403 problem "session_not_linked"

  @interface-2.7 @needs-portal
  Scenario: A session's request object is not served under another tenant's path: 404 not_found
    Given the application has opened a verification session for the degree check
    When a wallet fetches the session's request object under another tenant's path
    Then the answer is a 404 OAuth error "not_found"
    And the session's request has not been fetched

  @interface-2.7 @OID4VP-6.2 @needs-portal
  Scenario: A response posted under another tenant's path is refused with 404 not_found, and the session stays PENDING
    Given the application has opened a verification session for the degree check
    When the wallet answers with a refusal under another tenant's path
    Then the answer is a 404 OAuth error "not_found"
    And the session reads 202 PENDING

  @interface-2.6 @OID4VCI-4.1 @needs-portal
  Scenario: An offer is not served under another tenant's credential issuer: 404 not_found
    Given the application has opened an offer
    When a wallet fetches the offer under another tenant's issuer
    Then the answer is a 404 OAuth error "not_found"

  @OID4VCI-6.3 @needs-portal
  Scenario: Another tenant's token endpoint refuses a pre-authorized code with invalid_grant, and the code stays redeemable
    Given the application has opened an offer
    And the wallet scans the offer
    When the wallet redeems the pre-authorized code at another tenant's token endpoint
    Then the answer is a 400 OAuth error "invalid_grant"
    And the wallet can still redeem the pre-authorized code

  @OID4VCI-8.3.1 @needs-portal
  Scenario: Another tenant's credential endpoint refuses the wallet's access token with 401 invalid_token
    Given the application has opened an offer
    And the wallet scans the offer
    And the wallet redeems the pre-authorized code
    When the wallet sends a credential request with its access token to another tenant's credential endpoint
    Then the answer is a 401 OAuth error "invalid_token"

  # The management portal

  @interface-2.1 @interface-5 @needs-portal
  Scenario: Another tenant's administrator cannot revoke our API key: 404 api_key_not_found, and the key still works
    When another tenant's administrator tries to revoke the application's key
    Then the answer is a 404 problem "api_key_not_found"
    And the application can still log in

  @interface-2.1 @interface-5 @needs-portal
  Scenario: Another tenant's administrator does not see our API keys
    When another tenant's administrator lists its API keys
    Then none of our keys is in the list

  @interface-5 @needs-portal
  Scenario Outline: Another tenant's administrator cannot <action> our <kind> template: 404 template_not_found, and the template is unchanged
    Given the administrator has created its own <kind> template with a fresh id
    When another tenant's administrator tries to <action> that template
    Then the answer is a 404 problem "template_not_found"
    And the template reads exactly as before for its administrator

    Examples:
      | kind         | action  |
      | issuance     | read    |
      | issuance     | replace |
      | issuance     | delete  |
      | verification | replace |
      | verification | delete  |

  @interface-2.1 @interface-5 @needs-portal
  Scenario: Another tenant's administrator cannot link an API key to our template: 404 template_not_found
    Given the administrator has created its own issuance template with a fresh id
    When another tenant's administrator tries to create an application key linked to that template
    Then the answer is a 404 problem "template_not_found"

  @interface-5
  Scenario Outline: An application key may not <action> through the portal: 403 role_forbidden
    When the application tries to <action> through the portal
    Then the answer is a 403 problem "role_forbidden"

    Examples:
      | action                      |
      | list the API keys           |
      | create an API key           |
      | create an issuance template |

  @interface-5
  Scenario: An administrator may not create a tenant: 403 role_forbidden
    When the administrator tries to create a tenant
    Then the answer is a 403 problem "role_forbidden"

  @interface-2.1 @interface-5 @needs-portal
  Scenario: An administrator cannot make an operator key: 400 validation_failed naming body/role
    Given the administrator has counted the API keys
    When the administrator tries to create an API key with the role operator
    Then the answer is a 400 problem "validation_failed" naming the field "body/role"
    And the tenant's API keys are the same as before

  @interface-5 @needs-portal
  Scenario: The operator's powers end at its own tenant: it cannot revoke another tenant's API key
    When the operator tries to revoke the application's key
    Then the answer is a 404 problem "api_key_not_found"
    And the application can still log in
