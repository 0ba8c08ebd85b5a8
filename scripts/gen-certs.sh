#!/usr/bin/env bash
# Writes a throw-away certificate authority, a broker certificate and two client
# certificates (CN=alice, CN=bob) for a TLS-secured samsa cluster, with openssl. The same
# set as the Go package internal/security/testcerts makes for tests:
#   ca.pem ca.key                  the CA (ca.pem is a PEM trust store)
#   NAME.pem                       certificate followed by the CA certificate
#   NAME.key                       unencrypted PKCS#8 key
#   NAME-encrypted.key             PKCS#8 key encrypted with the password (ssl.key.password)
#   NAME-keystore.pem              key and chain in one file (ssl.keystore.type=PEM)
#   NAME.p12                       PKCS12 key store (ssl.keystore.type=PKCS12)
#   truststore.p12                 PKCS12 trust store, written only when keytool is installed
# for NAME in broker, alice, bob. The broker certificate names localhost, 127.0.0.1, ::1 and
# every HOST given (IP addresses or DNS names).
#
# Usage: scripts/gen-certs.sh [-d DIR] [-p PASSWORD] [HOST...]
#   DIR defaults to ./.cluster/certs, PASSWORD to test-pass. Existing files are overwritten.
set -euo pipefail

dir=.cluster/certs
password=test-pass
while getopts "d:p:h" opt; do
	case $opt in
	d) dir=$OPTARG ;;
	p) password=$OPTARG ;;
	*)
		sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
		exit 2
		;;
	esac
done
shift $((OPTIND - 1))

command -v openssl >/dev/null 2>&1 || { echo "error: openssl is not installed" >&2; exit 1; }
mkdir -p "$dir"
cd "$dir"
umask 077
days=3650
export PASS="$password"

newkey() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# The CA.
newkey ca.key
openssl req -x509 -new -key ca.key -sha256 -days "$days" -subj "/O=samsa/CN=samsa-test-ca" \
	-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
	-out ca.pem

# issue NAME SUBJECT EXTENSIONS: a key and a certificate signed by the CA, in every form.
issue() {
	local name=$1 subject=$2 ext=$3
	newkey "$name.key"
	openssl req -new -key "$name.key" -subj "$subject" -out "$name.csr"
	printf '%s\n' "$ext" >"$name.ext"
	openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -sha256 -days "$days" \
		-extfile "$name.ext" -out "$name.crt" 2>/dev/null
	cat "$name.crt" ca.pem >"$name.pem"
	cat "$name.key" "$name.pem" >"$name-keystore.pem"
	openssl pkcs8 -topk8 -v2 aes-256-cbc -v2prf hmacWithSHA256 -in "$name.key" -passout env:PASS -out "$name-encrypted.key"
	openssl pkcs12 -export -inkey "$name.key" -in "$name.crt" -certfile ca.pem -name "$name" \
		-keypbe AES-256-CBC -certpbe AES-256-CBC -macalg sha256 -passout env:PASS -out "$name.p12"
	rm -f "$name.csr" "$name.ext" "$name.crt"
}

san="DNS:localhost,IP:127.0.0.1,IP:::1"
for h in "$@"; do
	if [[ $h =~ ^[0-9.]+$ || $h == *:* ]]; then
		san="$san,IP:$h"
	else
		san="$san,DNS:$h"
	fi
done
issue broker "/OU=samsa/CN=broker" "subjectAltName=$san
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth,clientAuth"
for user in alice bob; do
	issue "$user" "/CN=$user" "keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
done
rm -f ca.srl

if command -v keytool >/dev/null 2>&1; then
	rm -f truststore.p12
	keytool -importcert -noprompt -alias samsa-test-ca -file ca.pem -keystore truststore.p12 \
		-storetype PKCS12 -storepass "$password" >/dev/null 2>&1
fi

abs=$(pwd)
cat <<EOF
Certificates written to $abs. Broker properties for an SSL listener with client certificates:
  listeners=SSL://127.0.0.1:9093
  ssl.keystore.type=PKCS12
  ssl.keystore.location=$abs/broker.p12
  ssl.keystore.password=$password
  ssl.truststore.type=PEM
  ssl.truststore.location=$abs/ca.pem
  ssl.client.auth=required
Client properties (alice):
  security.protocol=SSL
  ssl.truststore.type=PEM
  ssl.truststore.location=$abs/ca.pem
  ssl.keystore.type=PKCS12
  ssl.keystore.location=$abs/alice.p12
  ssl.keystore.password=$password
EOF
