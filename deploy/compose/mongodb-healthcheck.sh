#!/bin/sh
# Healthcheck of the mongodb service: healthy when this node is the writable primary. `hello` needs no
# authentication, so the usual check sends no password. Only when the replica set was never initiated
# (first start) does it log in as root, once, to run rs.initiate; any other state or error is "unhealthy",
# never a reason to initiate again.
set -eu
tls="--tls --tlsCAFile /run/secrets/tls_ca --host mongodb"
# shellcheck disable=SC2086
state=$(mongosh $tls --quiet --eval 'const h = db.hello(); print(h.isWritablePrimary ? "primary" : (h.setName ? "member" : "uninitiated"))')
case "$state" in
  primary) exit 0 ;;
  uninitiated)
    # shellcheck disable=SC2086
    mongosh $tls --quiet -u root -p "$(cat /run/secrets/mongodb_root_password)" --authenticationDatabase admin \
      --eval "rs.initiate({ _id: 'rs0', members: [{ _id: 0, host: 'mongodb:27017' }] })" >/dev/null
    exit 1 ;;
  *) exit 1 ;;
esac
