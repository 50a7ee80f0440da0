@verification @needs-portal
Feature: Linked Data presentations (ldp_vp) answer a Presentation Exchange session
  Section 2.8 of the interface advertises the Linked Data formats `ldp`, `ldp_vc` and `ldp_vp` with the proof
  types Ed25519Signature2018, JsonWebSignature2020, EcdsaSecp256k1Signature2019 and RsaSignature2018; the
  service verifies those and the VC Data Integrity cryptosuites eddsa-rdfc-2022 and ecdsa-rdfc-2019. Most
  scenarios play a wallet somebody else wrote: the steps make the keys, sign the credential and the
  presentation themselves (none of the simulated wallet's code), fetch the request object, post the ldp_vp to
  the session's response URI (direct_post, the vp_token a JSON string; proof challenge = the request's nonce,
  domain = its client_id) and read the outcome (4.7). Their credential comes from an issuer of the steps'
  own, which the scenario's verification template trusts. The last scenarios have the simulated wallet answer
  with an ldp_vc the tenant issued.

  Background:
    Given a tenant of our own with no template

  @interface-2.8 @interface-4.7 @OID4VP-7.2
  Scenario Outline: An ldp_vp signed with <proof type> by a holder's <key type> key reads VERIFIED
    Given a <key type> holder of a degree credential signed with <proof type> by an issuer of its own
    And the application has opened a verification session trusting that issuer
    When the holder posts an ldp_vp signed with <proof type>
    Then the verifier accepts the presentation
    And the session reads 200 VERIFIED for the holder with every check passed
    And securityMechanisms names the ldp_vp and its proof type <proof type>

    @LDP-ED25519-2018
    Examples: Ed25519Signature2018
      | proof type           | key type |
      | Ed25519Signature2018 | Ed25519  |

    @LDP-JWS-2020
    Examples: JsonWebSignature2020, with each key type 2.8's wallets use
      | proof type           | key type  |
      | JsonWebSignature2020 | Ed25519   |
      | JsonWebSignature2020 | P-256     |
      | JsonWebSignature2020 | secp256k1 |

    @LDP-SECP256K1-2019
    Examples: EcdsaSecp256k1Signature2019
      | proof type                  | key type  |
      | EcdsaSecp256k1Signature2019 | secp256k1 |

    @LDP-RSA-2018
    Examples: RsaSignature2018
      | proof type       | key type |
      | RsaSignature2018 | RSA      |

    @VC-DI-EDDSA-3.2
    Examples: eddsa-rdfc-2022
      | proof type      | key type |
      | eddsa-rdfc-2022 | Ed25519  |

    @VC-DI-ECDSA-3.2
    Examples: ecdsa-rdfc-2019
      | proof type      | key type |
      | ecdsa-rdfc-2019 | P-256    |

  @interface-2.9 @LDP-ED25519-2018
  Scenario: A VERIFIED session names ldp_vp as the format of what was submitted
    Given an Ed25519 holder of a degree credential signed with Ed25519Signature2018 by an issuer of its own
    And the application has opened a verification session trusting that issuer
    When the holder posts an ldp_vp signed with Ed25519Signature2018
    Then the session reads 200 VERIFIED for the holder with every check passed
    And the session names the format of the submission ldp_vp

  @security @interface-2.8 @VC-DATA-INTEGRITY-4.4
  Scenario Outline: A presentation signed with <proof type> whose credential was altered after signing fails both proofs
    Given a <key type> holder of a degree credential signed with <proof type> by an issuer of its own
    And the application has opened a verification session trusting that issuer
    When the holder posts an ldp_vp signed with <proof type> with its degree changed after signing
    Then the verifier refuses the presentation with HTTP 400 "invalid_presentation"
    And the session reads 200 REJECTED with presentationProof failed because "does not verify"
    And its credentialProof check failed too because "does not verify"

    @LDP-ED25519-2018
    Examples: Ed25519Signature2018
      | proof type           | key type |
      | Ed25519Signature2018 | Ed25519  |

    @LDP-JWS-2020
    Examples: JsonWebSignature2020
      | proof type           | key type  |
      | JsonWebSignature2020 | P-256     |

    @LDP-SECP256K1-2019
    Examples: EcdsaSecp256k1Signature2019
      | proof type                  | key type  |
      | EcdsaSecp256k1Signature2019 | secp256k1 |

    @LDP-RSA-2018
    Examples: RsaSignature2018
      | proof type       | key type |
      | RsaSignature2018 | RSA      |

    @VC-DI-EDDSA-3.2
    Examples: eddsa-rdfc-2022
      | proof type      | key type |
      | eddsa-rdfc-2022 | Ed25519  |

    @VC-DI-ECDSA-3.2
    Examples: ecdsa-rdfc-2019
      | proof type      | key type |
      | ecdsa-rdfc-2019 | P-256    |

  @security @OID4VP-7.2 @VC-DATA-INTEGRITY-2.1 @VC-DATA-INTEGRITY-4.4
  Scenario Outline: A presentation signed with <proof type> whose challenge is another request's nonce fails its session binding
    Given a <key type> holder of a degree credential signed with <proof type> by an issuer of its own
    And the application has opened a verification session trusting that issuer
    When the holder posts an ldp_vp signed with <proof type> whose challenge is not the request's nonce
    Then the verifier refuses the presentation with HTTP 400 "invalid_presentation"
    And the session reads 200 REJECTED with sessionBinding failed because "proof challenge"

    @LDP-ED25519-2018
    Examples: Ed25519Signature2018
      | proof type           | key type |
      | Ed25519Signature2018 | Ed25519  |

    @LDP-JWS-2020
    Examples: JsonWebSignature2020
      | proof type           | key type  |
      | JsonWebSignature2020 | secp256k1 |

    @LDP-SECP256K1-2019
    Examples: EcdsaSecp256k1Signature2019
      | proof type                  | key type  |
      | EcdsaSecp256k1Signature2019 | secp256k1 |

    @LDP-RSA-2018
    Examples: RsaSignature2018
      | proof type       | key type |
      | RsaSignature2018 | RSA      |

    @VC-DI-EDDSA-3.2
    Examples: eddsa-rdfc-2022
      | proof type      | key type |
      | eddsa-rdfc-2022 | Ed25519  |

    @VC-DI-ECDSA-3.2
    Examples: ecdsa-rdfc-2019
      | proof type      | key type |
      | ecdsa-rdfc-2019 | P-256    |

  @security @OID4VP-7.2 @VC-DATA-INTEGRITY-2.1 @VC-DATA-INTEGRITY-4.4 @LDP-JWS-2020
  Scenario: A presentation whose domain is another verifier fails its session binding
    Given a P-256 holder of a degree credential signed with JsonWebSignature2020 by an issuer of its own
    And the application has opened a verification session trusting that issuer
    When the holder posts an ldp_vp signed with JsonWebSignature2020 whose domain is not the verifier's client_id
    Then the verifier refuses the presentation with HTTP 400 "invalid_presentation"
    And the session reads 200 REJECTED with sessionBinding failed because "proof domain"

  @security @interface-2.5 @VC-DATA-INTEGRITY-4.4 @LDP-ED25519-2018
  Scenario: A presentation signed by another DID's key than its holder's fails its proof
    Given an Ed25519 holder of a degree credential signed with Ed25519Signature2018 by an issuer of its own
    And the application has opened a verification session trusting that issuer
    When the holder posts an ldp_vp signed with Ed25519Signature2018 by another DID's key
    Then the verifier refuses the presentation with HTTP 400 "invalid_presentation"
    And the session reads 200 REJECTED with presentationProof failed because "is not the controller of the proof's key"

  @security @OID4VP-7.2 @LDP-ED25519-2018
  Scenario: A credential made out to another DID cannot be presented by this holder
    Given an Ed25519 holder of a degree credential signed with Ed25519Signature2018 by an issuer of its own
    And the credential was made out to another DID with Ed25519Signature2018
    And the application has opened a verification session trusting that issuer
    When the holder posts an ldp_vp signed with Ed25519Signature2018
    Then the verifier refuses the presentation with HTTP 400 "invalid_presentation"
    And the session reads 200 REJECTED with holderBinding failed because "not to the presenter"

  @security @VC-DATA-INTEGRITY-2.4.3 @LDP-ED25519-2018
  Scenario: A term no context defines, added after signing, is refused rather than dropped (JSON-LD safe mode)
    Given an Ed25519 holder of a degree credential signed with Ed25519Signature2018 by an issuer of its own
    And the application has opened a verification session trusting that issuer
    When the holder posts an ldp_vp signed with Ed25519Signature2018 with a term no context defines added after signing
    Then the verifier refuses the presentation with HTTP 400 "invalid_presentation"
    And the session reads 200 REJECTED with presentationProof failed because "is not defined by the document's @context"

  @security @VC-DATA-INTEGRITY-2.4.1 @VC-DATA-INTEGRITY-5.14 @VC-DI-EDDSA-3.2
  Scenario: An @context the verifier does not have is refused and never fetched
    Given an Ed25519 holder of a degree credential signed with eddsa-rdfc-2022 by an issuer of its own
    And the application has opened a verification session trusting that issuer
    When the holder posts an ldp_vp signed with eddsa-rdfc-2022 with an @context the verifier does not have added after signing
    Then the verifier refuses the presentation with HTTP 400 "invalid_presentation"
    And the session reads 200 REJECTED with presentationProof failed because "nothing is fetched"
    And the verifier never fetched the @context

  # The simulated wallet (src/wallet/) with an ldp_vc the tenant issued: it signs with the first proof type of
  # the definition's format.ldp_vp list that its key makes (JsonWebSignature2020, listed first, for all three).

  @interface-2.8 @OID4VP-7.2 @OID4VCI-1.0-A.1.2
  Scenario Outline: The simulated wallet with its <key type> key receives an ldp_vc signed with <credential proof> and answers with an ldp_vp signed with <presentation proof>
    Given a <key type> wallet holds the degree as an ldp_vc signed with <credential proof> by the tenant's <alg> key
    And the application has opened a verification session trusting the tenant's issuers
    When the <key type> wallet presents
    Then the wallet is told the presentation was accepted
    And the session reads 200 VERIFIED for the <key type> wallet with every check passed
    And securityMechanisms names the ldp_vp and its proof type <presentation proof>

    @LDP-ED25519-2018 @LDP-JWS-2020
    Examples: Ed25519
      | key type | credential proof     | alg   | presentation proof   |
      | Ed25519  | Ed25519Signature2018 | EdDSA | JsonWebSignature2020 |

    @LDP-JWS-2020 @VC-DI-ECDSA-3.2
    Examples: P-256
      | key type | credential proof | alg   | presentation proof   |
      | P-256    | ecdsa-rdfc-2019  | ES256 | JsonWebSignature2020 |

    @LDP-SECP256K1-2019 @LDP-JWS-2020
    Examples: secp256k1
      | key type  | credential proof            | alg    | presentation proof   |
      | secp256k1 | EcdsaSecp256k1Signature2019 | ES256K | JsonWebSignature2020 |

  @security @VC-DATA-INTEGRITY-2.4.3 @LDP-ED25519-2018
  Scenario: The simulated wallet's ldp_vp with a term added after signing is REJECTED
    Given an Ed25519 wallet holds the degree as an ldp_vc signed with Ed25519Signature2018 by the tenant's EdDSA key
    And the application has opened a verification session trusting the tenant's issuers
    When the wallet presents misbehaving with ldp-undefined-term
    Then the verifier refuses the wallet with HTTP 400 "invalid_presentation"
    And the session reads 200 REJECTED with presentationProof failed because "is not defined by the document's @context"
