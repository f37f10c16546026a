#!/bin/sh
# Creates ./secrets for docker-compose.yml: random passwords, the MongoDB keyfile, the MongoDB connection
# string, a private CA with a MongoDB server certificate, and a self-signed certificate for the proxy
# (replace proxy.crt/proxy.key with your real ones, or set WRS_TLS to an ACME e-mail address).
# Never overwrites an existing file: rerunning it fills in only what is missing. Needs openssl.
set -eu
cd "$(dirname "$0")/../.."
umask 077
mkdir -p secrets
cd secrets
domain="${WRS_DOMAIN:-localhost}"
db="${MONGODB_DB:-wrs}"

random() { openssl rand -hex "$1"; }
# create FILE COMMAND...: writes the command's output to FILE unless FILE exists.
create() {
  file=$1; shift
  [ -e "$file" ] || { "$@" > "$file.tmp" && mv "$file.tmp" "$file" && echo "created secrets/$file"; }
}

create mongodb_root_password random 24
create mongodb_wrs_password random 24
create file_url_secret random 32
create codec_token random 32
# D32: the payload encryption key, `id:base64 of 32 bytes`; to rotate, append `,k2:...` (newest last).
create payload_keys sh -c 'printf "k1:%s\n" "$(openssl rand -base64 32)"'
create grafana_admin_password random 16
# PostgreSQL's superuser (operators only; Temporal has its own role, TEMPORAL_DB_PASSWORD in .env).
create postgresql_password random 24
# Alertmanager's receiver (deploy/alertmanager/alertmanager.yml): your incoming-webhook URL. A placeholder that
# delivers nowhere until you replace it (WRS_ALERT_WEBHOOK_URL=... when running this script writes yours).
create alertmanager_webhook_url printf '%s\n' "${WRS_ALERT_WEBHOOK_URL:-http://alerts.invalid/replace-me}"
# At most 1024 base64 characters; 512 random bytes -> 684 (plus line breaks, which MongoDB ignores).
create mongodb_keyfile openssl rand -base64 512
[ -e mongodb_uri ] || {
  printf 'mongodb://wrs:%s@mongodb:27017/%s?replicaSet=rs0&authSource=admin&tls=true&tlsCAFile=/run/secrets/tls_ca\n' \
    "$(cat mongodb_wrs_password)" "$db" > mongodb_uri
  echo "created secrets/mongodb_uri"
}

if [ ! -e ca.crt ]; then
  openssl req -x509 -newkey rsa:3072 -nodes -days 3650 -subj "/CN=wrs internal CA" -keyout ca.key -out ca.crt 2>/dev/null
  echo "created secrets/ca.crt (keep ca.key offline after issuing certificates)"
fi
if [ ! -e mongodb.pem ]; then
  openssl req -newkey rsa:3072 -nodes -subj "/CN=mongodb" -keyout mongodb.key -out mongodb.csr 2>/dev/null
  printf 'subjectAltName=DNS:mongodb,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' > mongodb.ext
  openssl x509 -req -in mongodb.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 825 -extfile mongodb.ext -out mongodb.crt 2>/dev/null
  cat mongodb.crt mongodb.key > mongodb.pem
  rm -f mongodb.csr mongodb.ext mongodb.key ca.srl
  echo "created secrets/mongodb.pem"
fi
if [ ! -e proxy.crt ]; then
  openssl req -x509 -newkey rsa:3072 -nodes -days 90 -subj "/CN=$domain" -addext "subjectAltName=DNS:$domain" \
    -keyout proxy.key -out proxy.crt 2>/dev/null
  echo "created secrets/proxy.crt (self-signed for $domain: replace it with your certificate)"
fi
# The containers run as other users (mongodb 999, node 1000, grafana 472): the passwords and certificates are
# readable by all, inside a directory only the owner can list. Tighten with your own ownership scheme where you can.
chmod 0644 ./*
# Private keys are for their owner only (0600): the CA key (no container needs it: move it offline once the
# certificates are issued), the proxy's key (Caddy runs as root), MongoDB's server key and keyfile (the mongodb
# service copies them to its own 0400 files as root before it starts).
for key in ca.key proxy.key mongodb.pem mongodb_keyfile; do
  [ ! -e "$key" ] || chmod 0600 "$key"
done
rm -f mongodb.crt
