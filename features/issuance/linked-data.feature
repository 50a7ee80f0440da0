@issuance @needs-portal
Feature: The tenant issues ldp_vc credentials with the proof types of section 2.8 and Data Integrity
  An issuance template with format ldp_vc names a proof type (section 2.8's four, or a VC Data Integrity
  cryptosuite) and the tenant key that signs it (signingAlg; PS256 is an RSA key). The credential issued over
  OpenID4VCI is the section 2.3 object completed for its holder, with an embedded assertionMethod proof and a
  Bitstring status entry. Here the holder is no simulated wallet: the steps redeem the offer by hand (offer,
  metadata, token, a JWT key proof, credential request) and present what they received in an ldp_vp they sign
  themselves to the tenant's degree check, which trusts the tenant's issuers and requires an active status.
  The templates are created through the portal in the scenario's own tenant.

  Background:
    Given a tenant of our own with no template

  @interface-2.3 @interface-2.8 @OID4VCI-8.3 @BitstringStatusList
  Scenario Outline: An ldp_vc signed with <proof type> by the tenant's <alg> key is issued and verifies
    Given the tenant has an ldp_vc issuance template signing with <proof type> by its <alg> key
    When a holder receives the degree from it over OpenID4VCI
    Then the holder has a JSON ldp_vc for its DID with a <proof type> assertionMethod proof by the tenant's issuer and a Bitstring status entry
    When the holder presents it to the degree check in an ldp_vp signed with Ed25519Signature2018
    Then the verifier accepts the presentation
    And the session reads 200 VERIFIED for the holder with every check passed

    @LDP-ED25519-2018
    Examples: Ed25519Signature2018
      | proof type           | alg   |
      | Ed25519Signature2018 | EdDSA |

    @LDP-JWS-2020
    Examples: JsonWebSignature2020
      | proof type           | alg   |
      | JsonWebSignature2020 | ES256 |

    @LDP-SECP256K1-2019
    Examples: EcdsaSecp256k1Signature2019
      | proof type                  | alg    |
      | EcdsaSecp256k1Signature2019 | ES256K |

    @LDP-RSA-2018
    Examples: RsaSignature2018
      | proof type       | alg   |
      | RsaSignature2018 | PS256 |

    @VC-DI-EDDSA-3.2
    Examples: eddsa-rdfc-2022
      | proof type      | alg   |
      | eddsa-rdfc-2022 | EdDSA |

    @VC-DI-ECDSA-3.2
    Examples: ecdsa-rdfc-2019
      | proof type      | alg   |
      | ecdsa-rdfc-2019 | ES256 |

  @OID4VCI-1.0-A.1.2 @LDP-RSA-2018
  Scenario: The issuer metadata describes an ldp_vc configuration with its @context, type and proof type
    Given the tenant has an ldp_vc issuance template signing with RsaSignature2018 by its PS256 key
    When a holder receives the degree from it over OpenID4VCI
    Then the issuer metadata describes the template as an ldp_vc configuration with its @context, type and RsaSignature2018

  @interface-2.3 @interface-4.3 @LDP-ED25519-2018
  Scenario: The process data shows the signed ldp_vc exactly as the holder received it
    Given the tenant has an ldp_vc issuance template signing with Ed25519Signature2018 by its EdDSA key
    When a holder receives the degree from it over OpenID4VCI
    Then the process data shows the ldp_vc the holder received, with its proof

  @security @BitstringStatusList @VC-DI-EDDSA-3.2
  Scenario: A revoked ldp_vc is rejected by its status list
    Given the tenant has an ldp_vc issuance template signing with eddsa-rdfc-2022 by its EdDSA key
    And a holder receives the degree from it over OpenID4VCI
    And the relying party has revoked the ldp_vc
    When the holder presents it to the degree check in an ldp_vp signed with eddsa-rdfc-2022
    Then the verifier refuses the presentation with HTTP 400 "invalid_presentation"
    And the session reads 200 REJECTED with credentialStatus failed because "revoked"
