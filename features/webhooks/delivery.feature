@webhooks @needs-portal @needs-webhooks
Feature: Terminal events reach the relying party as signed webhooks, at least once and retried
  Section 6 of the interface: when an issuance process or a verification session ends, the service POSTs
  a JSON body {id, subject, status, payload, verificationResult} to the template's webhook URL. Delivery is
  not shown there, so docs/webhooks.md sets the bar: an outbox row written with the state change, Standard
  Webhooks signatures, retries with backoff on timeouts, connection errors, 3xx and 5xx, Retry-After
  honoured, 410 disabling the endpoint, redelivery on request. The harness's receiver verifies every
  signature; each scenario waits for deliveries as they arrive, never for a fixed time.

  Background:
    Given a tenant of our own

  @interface-6 @interface-4.7
  Scenario: A verified presentation is reported by exactly one SUCCESS webhook about the session
    Given the verification template sends its webhooks to the harness receiver
    And the wallet holds a degree credential
    And the application has opened a verification session for the degree check
    When the wallet presents
    Then within 10 seconds the receiver got exactly one SUCCESS about the session
    And the webhook body has only the fields of section 6, the holder as subject and the shared claims without id
    And the webhook lists the checks matchingIds, presentationProof, securityMechanisms and credentialProof

  @interface-6 @security
  Scenario: A rejected presentation is reported by exactly one REJECT webhook naming the failed check
    Given the verification template sends its webhooks to the harness receiver
    And the wallet holds a degree credential
    And the application has opened a verification session for the degree check
    When the wallet presents misbehaving with vp-wrong-nonce
    Then the verifier refuses the wallet with HTTP 400 "invalid_presentation"
    And within 10 seconds the receiver got exactly one REJECT about the session
    And the webhook errors mention "sessionBinding"

  @interface-6 @interface-4.4
  Scenario: An issued credential is reported by exactly one SUCCESS webhook about the process
    Given the issuance template sends its webhooks to the harness receiver
    And the application has opened an offer
    And the application has submitted the degree credential
    When the wallet completes the flow
    Then within 10 seconds the receiver got exactly one SUCCESS about the process
    And the webhook body has only the fields of section 6, the holder as subject and the shared claims without id

  @interface-6 @interface-3
  Scenario: A rejected process is reported by exactly one REJECT webhook carrying the reason
    Given the issuance template sends its webhooks to the harness receiver
    And the application has opened an offer
    When the administrator rejects the process because "the diploma could not be confirmed"
    Then within 10 seconds the receiver got exactly one REJECT about the process
    And the webhook errors mention "the diploma could not be confirmed"

  @StandardWebhooks @security
  Scenario: A delivery carries webhook-id, a whole-second timestamp and a v1 HMAC that only the template's secret verifies
    Given the verification template sends its webhooks to the harness receiver
    And the wallet holds a degree credential
    And the application has opened a verification session for the degree check
    When the wallet presents
    Then within 10 seconds the receiver got exactly one SUCCESS about the session
    And the delivery is signed per Standard Webhooks with the template's secret and with no other

  @StandardWebhooks @security
  Scenario: During a secret rotation a delivery is signed with the new and the previous secret
    Given the verification template sends its webhooks to the harness receiver during a secret rotation
    And the wallet holds a degree credential
    And the application has opened a verification session for the degree check
    When the wallet presents
    Then within 10 seconds the receiver got exactly one SUCCESS about the session
    And the delivery carries 2 v1 signatures, one of which verifies with the previous secret

  @webhooks-retry
  Scenario: A receiver failing with 503 twice gets the same event again until it acknowledges it
    Given the verification template sends its webhooks to the harness receiver
    And the receiver answers 503 twice
    And the wallet holds a degree credential
    And the application has opened a verification session for the degree check
    When the wallet presents
    Then within 15 seconds the receiver got exactly one SUCCESS about the session
    And the receiver got 3 attempts of that event, all with the same webhook-id
    And the delivery log shows 2 retries and then delivered

  @webhooks-retry
  Scenario: A Retry-After answer postpones the next attempt by at least that long
    Given the verification template sends its webhooks to the harness receiver
    And the receiver answers 503 with Retry-After 1 once
    And the wallet holds a degree credential
    And the application has opened a verification session for the degree check
    When the wallet presents
    Then within 15 seconds the receiver got exactly one SUCCESS about the session
    And the second attempt came at least 1 second after the first

  @webhooks-retry
  Scenario: An answer slower than the service's timeout counts as a failure and is retried
    Given the verification template sends its webhooks to the harness receiver
    And the receiver answers only after the service's timeout once
    And the wallet holds a degree credential
    And the application has opened a verification session for the degree check
    When the wallet presents
    Then within 15 seconds the receiver got exactly one SUCCESS about the session
    And the delivery log shows a timeout and then delivered

  @webhooks-retry @security
  Scenario: A redirect is retried at the configured URL and never followed
    Given the verification template sends its webhooks to the harness receiver
    And the receiver redirects once to another of its endpoints
    And the wallet holds a degree credential
    And the application has opened a verification session for the degree check
    When the wallet presents
    Then within 15 seconds the receiver got exactly one SUCCESS about the session
    And the redirect target received nothing

  @webhooks-retry
  Scenario: A 4xx answer other than 408, 410 and 429 is not retried and the delivery fails
    Given the verification template sends its webhooks to the harness receiver
    And the receiver answers 400 always
    And the wallet holds a degree credential
    And the application has opened a verification session for the degree check
    When the wallet presents
    Then the delivery log shows the event failed after 1 attempt
    And the receiver got 1 attempt of that event

  @webhooks-retry
  Scenario: A 410 Gone disables the endpoint and later events are not sent to it
    Given the verification template sends its webhooks to the harness receiver
    And the receiver answers 410 always
    And the wallet holds a degree credential
    And the application has opened a verification session for the degree check
    When the wallet presents
    Then the delivery log shows the event disabled after 1 attempt
    And the delivery log shows the endpoint disabled
    When the application opens another verification session and the wallet presents to it
    Then the delivery log shows that event disabled without any attempt reaching the receiver

  @webhooks-redelivery
  Scenario: A redelivery requested by the administrator repeats the event with the same webhook-id
    Given the verification template sends its webhooks to the harness receiver
    And the wallet holds a degree credential
    And the application has opened a verification session for the degree check
    And the wallet presents
    And within 10 seconds the receiver got exactly one SUCCESS about the session
    When the administrator requests a redelivery of that event
    Then within 10 seconds the receiver got that webhook-id a second time
    And the delivery log records the redelivery

  @security
  Scenario Outline: A webhook URL aimed at <target> is refused with 400 invalid_webhook
    When the administrator points the verification template's webhook at "<url>"
    Then the answer is a 400 problem "invalid_webhook" naming the field "body/webhookUrl"

    Examples:
      | target                          | url                                        |
      | a private network address       | http://10.0.0.7/hooks                      |
      | the cloud metadata address      | http://169.254.169.254/latest/meta-data/   |
      | an IPv6 unique local address    | http://[fd00::1]/hooks                     |

  @security @StandardWebhooks
  Scenario: A webhook URL without a signing secret is refused with 400 invalid_webhook
    When the administrator points the verification template's webhook at "https://rp.example/hooks" without a secret
    Then the answer is a 400 problem "invalid_webhook" naming the field "body/webhookSecret"
