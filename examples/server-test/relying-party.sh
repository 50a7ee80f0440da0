#!/bin/sh
# The relying party of a vc-harness deployment, in curl and sed only: what a user of any other issuer or
# verifier writes as the commands of `vc-harness issuer-test` and `vc-harness verifier-test`
# (docs/server-testing.md). Each call logs in with the application key (4.1) and does one thing:
#
#   relying-party.sh offer                     create an offer (4.2), submit its content (4.4), print the offer
#   relying-party.sh deferred-offer            create an offer and print it; its content comes later
#   relying-party.sh complete OFFER TX_ID      submit the content of OFFER's process (the issuer answered 202)
#   relying-party.sh request                   create a verification session (4.6), print its request link
#   relying-party.sh result STATE SESSION      print the session's 4.7 answer (Status VERIFIED / REJECTED)
#
# Settings (environment): VC_HARNESS_URL (default http://127.0.0.1:8080), VC_HARNESS_TENANT (demo),
# VC_HARNESS_TEMPLATE (degree), VC_HARNESS_KEY_ID, VC_HARNESS_KEY_SECRET (the demo's degree key),
# VC_HARNESS_CONTENT (the 4.4 body; default a UniversityDegreeCredential).
set -eu
url=${VC_HARNESS_URL:-http://127.0.0.1:8080}
tenant=${VC_HARNESS_TENANT:-demo}
template=${VC_HARNESS_TEMPLATE:-degree}
key_id=${VC_HARNESS_KEY_ID:-0b6c1f5e-3f4e-4c8a-9d2b-7a1e5c3d9f01}
key_secret=${VC_HARNESS_KEY_SECRET:-demo-app-secret-7Qm2xV9pL4sT8wZ1}
content=${VC_HARNESS_CONTENT:-'[{"type":["VerifiableCredential","UniversityDegreeCredential"],"credentialSubject":{"degree":{"type":"BachelorDegree","name":"Bachelor of Science and Arts"}}}]'}

login() {
  curl -sSf -D - -o /dev/null -X POST "$url/admin/v1/api_keys/login" \
    -u "$key_id:$key_secret" -H "tenant: $tenant" -H "ssiconfig: $template" |
    tr -d '\r' | sed -n 's/^[Tt]oken: //p'
}

# the process id is the last path segment of the credential_offer_uri inside the deep link
process_of() {
  printf '%s\n' "$1" | sed 's/.*%2F//; s/[&#].*//'
}

create_offer() {
  curl -sSf -X POST "$url/api/v3/oidc-issuance/credential-offer" \
    -H "authorization: jwt $1" -H 'content-type: application/json' -d "{\"group\":\"$template\"}"
}

submit() {
  curl -sSf -o /dev/null -X PATCH "$url/admin/v1/issuanceRequests/$2/credentials" \
    -H "authorization: jwt $1" -H 'content-type: application/json' -d "$content"
}

offer_link() {
  printf '%s\n' "$1" | sed -n 's/.*"credential_offer_uri":"\([^"]*\)".*/\1/p'
}

case "${1:-}" in
  offer | deferred-offer)
    token=$(login)
    answer=$(create_offer "$token")
    link=$(offer_link "$answer")
    [ "$1" = offer ] && submit "$token" "$(process_of "$link")"
    printf '%s\n' "$link"
    tx=$(printf '%s\n' "$answer" | sed -n 's/.*"tx_code":"\([^"]*\)".*/\1/p')
    [ -n "$tx" ] && printf 'tx_code: %s\n' "$tx"
    exit 0
    ;;
  complete)
    submit "$(login)" "$(process_of "$2")"
    ;;
  request)
    curl -sSf -X POST "$url/api/v3/sessions" -H "authorization: jwt $(login)" \
      -H 'content-type: application/json' -d "{\"ssiConfigId\":\"$template\"}" |
      sed -n 's/.*"authentication_request":"\([^"]*\)".*/\1/p'
    ;;
  result)
    curl -sS "$url/api/v3/sessions/$3" -H "authorization: jwt $(login)"
    ;;
  *)
    echo "usage: $0 offer | deferred-offer | complete OFFER TX_ID | request | result STATE SESSION" >&2
    exit 2
    ;;
esac
