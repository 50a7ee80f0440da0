@issuance @haip @needs-portal @needs-test-wallet-provider
Feature: Issuance by the authorization code flow, as the High Assurance Interoperability Profile asks
  HAIP 1.0 §4 has issuers and wallets support the authorization code flow of OpenID4VCI 1.0 (§5, §6), issuer-
  and wallet-initiated, with pushed authorization requests (RFC 9126), PKCE with S256 (RFC 7636), access tokens
  bound to the wallet's key by DPoP (RFC 9449) and the wallet authenticated by a wallet attestation (OAuth 2.0
  Attestation-Based Client Authentication). A template takes this flow when its grants name
  authorization_code: its offers carry that grant alone, with an issuer_state, and the wallet goes through PAR,
  the authorization endpoint and a DPoP token request; the process, attended issuance and the webhooks stay
  what they are with a pre-authorized offer. The simulated wallet's attestations are signed by vc-harness's
  published test wallet provider, so the scenarios run in the target's configured tenant, which must trust it;
  each creates its templates there through the portal under names of its own. Misbehaving wallets and a raw
  client show each refusal with its OAuth error.

  Background:
    Given the configured tenant, trusting the test wallet provider, has a template issuing an SD-JWT VC by the authorization code flow

  @HAIP-1.0-4.1 @RFC8414-2 @RFC9126-5 @RFC9207-3 @RFC9449-5.1 @OAuth-Attestation-10.1
  Scenario: The authorization server metadata requires pushed authorization requests and announces PKCE S256 only, iss in the authorization response, ES256 DPoP proofs and wallet attestation
    When the authorization server metadata of the tenant's credential issuer is read
    Then it requires pushed authorization requests, takes PKCE S256 and not plain, announces iss, ES256 DPoP proofs and attest_jwt_client_auth

  @HAIP-1.0-4.1 @OID4VCI-1.0-4.1.1 @OID4VCI-1.0-5.1 @OID4VCI-1.0-6.2
  Scenario: A wallet completes an offer of the authorization_code grant alone through PAR, the authorization endpoint and a DPoP-bound token, and receives the SD-JWT VC bound to its key
    Given the application has opened an offer for the HAIP template
    And the application has submitted the identity credential
    When a P-256 wallet takes the offer
    Then the offer granted authorization_code alone, with an issuer_state, and the wallet took the authorization code flow
    And the wallet holds an SD-JWT VC of the HAIP template with the submitted claims, bound to its key
    And the process is ISSUED

  @HAIP-1.0-4.1 @OID4VCI-1.0-9 @interface-4.4
  Scenario: Before the application submits, the wallet of the authorization code flow is told to come back later, and collects the credential from the deferred endpoint with its DPoP-bound token once submitted
    Given the application has opened an offer for the HAIP template
    And a P-256 wallet has taken the offer and was told to come back later
    When the application submits the identity credential
    And the wallet collects the credential from the deferred endpoint
    Then the wallet holds an SD-JWT VC of the HAIP template with the submitted claims, bound to its key
    And the process is ISSUED

  @HAIP-1.0-4.1 @OID4VCI-1.0-5.1
  Scenario: A wallet starting from the issuer metadata alone, with no offer, receives the credential the template supplies, and the administrator finds the process ISSUED
    Given the tenant has a HAIP template that supplies the identity credential when the wallet is authorized
    When a P-256 wallet asks for that template's credential from the issuer metadata alone
    Then the wallet holds an SD-JWT VC of the wallet-initiated template with the claims it supplies, bound to its key
    And the administrator lists one ISSUED process of the wallet-initiated template

  @RFC9126-2 @RFC9126-4 @RFC6749-4.1.2 @RFC9207-2
  Scenario: A pushed authorization request is answered with a request_uri, and the authorization endpoint answers it with a redirect carrying the code, the client's state and the authorization server's iss
    When a client pushes an authorization request for the HAIP template and follows the authorization endpoint with its request_uri
    Then the authorization endpoint redirects to the client's redirect_uri with a code, the state it sent and iss the authorization server's issuer identifier

  @RFC9449-5 @OID4VCI-1.0-6.2 @HAIP-1.0-4.1
  Scenario: The token response holds an access token of token_type DPoP and authorization_details naming the credential identifiers of the configuration
    When a client obtains an access token for the HAIP template through PAR, the authorization endpoint and a DPoP token request
    Then the token response holds a DPoP-bound access token and authorization_details with the template's credential identifiers

  @RFC9449-8
  Scenario: A token request whose DPoP proof carries no server nonce is answered use_dpop_nonce with a DPoP-Nonce, and the retry with that nonce gets the access token
    Given a client has been through the authorization endpoint for the HAIP template
    When the client redeems its authorization code with a DPoP proof carrying no server nonce
    Then the answer is a 400 OAuth error "use_dpop_nonce"
    And the answer names a DPoP-Nonce, with which the client's retry gets a DPoP-bound access token

  @RFC9449-7.2 @RFC9449-7.1 @security
  Scenario: A DPoP-bound access token presented as a Bearer token at the credential endpoint is refused with 401 invalid_token, and taken under the DPoP scheme with a proof of its key
    Given a client holds a DPoP-bound access token for the HAIP template
    When the client presents it at the credential endpoint as a Bearer token
    Then the credential endpoint refuses it with 401 invalid_token
    And the same request under the DPoP scheme with a proof of its key gets past the token, refused only for its missing key proof with 400 invalid_proof

  @RFC6749-4.1.2.1 @RFC9207-2
  Scenario: A person who declines on the authorization page sends the client back with access_denied, the client's state and the authorization server's iss
    Given the tenant has a HAIP template whose user step is a page a person decides on
    When a client pushes an authorization request for that template and the person declines on the page
    Then the authorization response is the error access_denied, with the state the client sent and the authorization server's iss

  @security
  Scenario Outline: A pushed authorization request <defect> is refused with 400 <error>
    When a client pushes an authorization request for the HAIP template <defect>
    Then the answer is a 400 OAuth error "<error>"

    @RFC7636-4.4.1 @HAIP-1.0-4.1
    Examples: PKCE with S256 only
      | defect                     | error           |
      | with the PKCE method plain | invalid_request |
      | without a code_challenge   | invalid_request |

    @RFC6749-4.1.2.1
    Examples: the response type of the authorization code flow only
      | defect                             | error                     |
      | with response_type token           | unsupported_response_type |
      | with response_type "code id_token" | unsupported_response_type |

    @RFC9126-2.1
    Examples: no request_uri pushed
      | defect                 | error           |
      | carrying a request_uri | invalid_request |

  @security @OAuth-Attestation-6.2 @HAIP-1.0-4.1
  Scenario Outline: A pushed authorization request whose wallet attestation <defect> is refused with 401 invalid_client
    When a client pushes an authorization request for the HAIP template with a wallet attestation that <defect>
    Then the answer is a 401 OAuth error "invalid_client"

    Examples:
      | defect                                                       |
      | has a signature that does not verify                         |
      | expired ten minutes ago                                      |
      | names no client (no sub)                                     |
      | comes with a PoP whose signature does not verify             |
      | comes with a PoP signed by another key than the attested one |

  @security
  Scenario Outline: The authorization endpoint refuses <request> with 400 <error>
    Given a client has pushed an authorization request for the HAIP template
    When the client asks the authorization endpoint with <request>
    Then the answer is a 400 OAuth error "<error>"

    @RFC9126-4
    Examples: a pushed request_uri, once and for its client only
      | request                                 | error               |
      | the request_uri it has used already     | invalid_request_uri |
      | its request_uri under another client_id | invalid_request     |
      | a request_uri the server never gave     | invalid_request_uri |

    @RFC9126-5 @HAIP-1.0-4.1
    Examples: pushed authorization requests required
      | request                                     | error           |
      | the parameters of a request it never pushed | invalid_request |

  @HAIP-1.0-4.1 @interface-4.3 @interface-6 @needs-webhooks
  Scenario: The relying party sees an authorization code issuance as it sees a pre-authorized one: the same ISSUED process and the same SUCCESS webhook
    Given the tenant has a HAIP template and a pre-authorized template of the same credential, both sending their webhooks to the harness receiver
    When a P-256 wallet takes an offer of each, the application having submitted the identity credential to both
    Then both processes read ISSUED with the same members, the same holder and the same claims
    And within 10 seconds each process was reported by exactly one SUCCESS webhook, the two alike but for their ids

  @security
  Scenario Outline: A wallet misbehaving with <misbehaviour> is refused at its <step> request with <status> <error>, and nothing is issued
    Given the application has opened an offer for the HAIP template
    And the application has submitted the identity credential
    When a P-256 wallet takes the offer misbehaving with <misbehaviour>
    Then the wallet is refused at its <step> request with HTTP <status> "<error>"
    And the process is PENDING

    @RFC7636-4.6
    Examples: PKCE
      | misbehaviour           | step  | status | error         |
      | pkce-verifier-mismatch | token | 400    | invalid_grant |

    @RFC6749-4.1.2 @RFC6749-10.5
    Examples: the authorization code
      | misbehaviour | step  | status | error         |
      | code-replay  | token | 400    | invalid_grant |

    @RFC6749-4.1.3
    Examples: the redirect_uri
      | misbehaviour                     | step  | status | error         |
      | authorization-wrong-redirect-uri | token | 400    | invalid_grant |

    @RFC9449-4.3
    Examples: the DPoP proof of the token request
      | misbehaviour   | step  | status | error              |
      | dpop-wrong-htu | token | 400    | invalid_dpop_proof |
      | dpop-wrong-htm | token | 400    | invalid_dpop_proof |

    @RFC9449-11.1
    Examples: a DPoP proof replayed
      | misbehaviour      | step  | status | error              |
      | dpop-replayed-jti | token | 400    | invalid_dpop_proof |

    @RFC9449-7.2
    Examples: the DPoP-bound access token
      | misbehaviour         | step       | status | error         |
      | dpop-token-as-bearer | credential | 401    | invalid_token |

    @OAuth-Attestation-6.2 @HAIP-1.0-4.1
    Examples: the wallet attestation
      | misbehaviour                   | step | status | error          |
      | attestation-untrusted-provider | par  | 401    | invalid_client |
      | attestation-pop-wrong-aud      | par  | 401    | invalid_client |
