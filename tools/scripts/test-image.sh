#!/usr/bin/env bash
# The image test end to end (`npm run test:image`, and .ci/run before `npm test`): Docker's daemon, the
# locally made base image, `docker build` of the Dockerfile, then test/deploy/image.container.ts, which runs
# the image's API and worker containers as Compose does. Idempotent, as root, on Debian:
#   - installs Debian's docker.io and debootstrap if missing;
#   - starts dockerd (vfs storage driver, its own socket, data root and exec root) only if DOCKER_HOST does
#     not answer, and then stops it on exit; a daemon that was already running is left alone;
#   - makes the base stand-in (deploy/docker/make-base-image.sh) only if `docker image inspect` misses it;
#   - builds with the legacy builder's layer cache kept in the data root, so a rebuild redoes only the layers
#     whose files changed, and deletes the chains of earlier builds (with vfs every layer is a full copy of
#     the filesystem: about 1 GB each, so keeping them would fill the disk within a few CI runs);
#   - runs the test with mocha's spec reporter: .ci/run's last line stays `npm test`'s "N passed, N failed".
# Each step prints its time. Exits non-zero when any step fails.
#
#   DOCKER_HOST           default unix:///run/wrs-docker.sock (the test reads it too)
#   WRS_DOCKER_DATA_ROOT  default /var/lib/wrs-docker (the layer cache)
#   NODE_IMAGE            default wrs-local/node:24.21.0-bookworm-slim (the base stand-in)
#   WRS_IMAGE             default wrs:local (the image built and tested)
#   EXTRA_CA_DIR          authorities for `npm ci` in the build behind a TLS-intercepting proxy; default the
#                         host's own added ones (/usr/local/share/ca-certificates) when there are any
set -euo pipefail
cd "$(dirname "$0")/../.."

export DOCKER_HOST="${DOCKER_HOST:-unix:///run/wrs-docker.sock}"
export WRS_IMAGE="${WRS_IMAGE:-wrs:local}"
DATA_ROOT="${WRS_DOCKER_DATA_ROOT:-/var/lib/wrs-docker}"
NODE_IMAGE="${NODE_IMAGE:-wrs-local/node:24.21.0-bookworm-slim}"
# The build stage's last image, tagged so its layers (npm ci above all) survive the pruning of old chains.
BUILD_STAGE_IMAGE="${WRS_IMAGE}-build"
DOCKERD_LOG="${TMPDIR:-/tmp}/wrs-dockerd.log"
BUILD_LOG="${TMPDIR:-/tmp}/wrs-image-build.log"

say() { echo "test-image: $*"; }
secs() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
script_started=$EPOCHREALTIME
step_name=""
step_started=""
timings=()
step() { # step <name>: ends the previous step (printing its time) and starts the next
  if [ -n "$step_name" ]; then
    timings+=("$(printf '%-22s %7s s' "$step_name" "$(secs "$step_started")")")
    say "$step_name: $(secs "$step_started") s"
  fi
  step_name="$1"
  step_started=$EPOCHREALTIME
  [ -n "$step_name" ] && say "$step_name ..."
  return 0
}

dockerd_pid=""
finish() {
  local code=$?
  if [ "$code" -ne 0 ] && [ -n "$step_name" ]; then say "FAILED in '$step_name' after $(secs "$step_started") s"; fi
  if [ -n "$dockerd_pid" ]; then
    say "stopping the dockerd this script started (pid $dockerd_pid)"
    kill -TERM "$dockerd_pid" 2>/dev/null || true
    wait "$dockerd_pid" 2>/dev/null || true
  fi
  say "total $(secs "$script_started") s"
  exit "$code"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step "OS packages"
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The npm packages and the servers the test runs on (the production Temporal, FerretDB): what `npm test`'s
# pretest builds, into ~/.cache/wrs, so a later `npm test` finds them made.
step "npm packages, servers"
node tools/scripts/ensure-deps.cjs

step "dockerd"
if docker info >/dev/null 2>&1; then
  say "a daemon already answers on $DOCKER_HOST: using it"
else
  case "$DOCKER_HOST" in
    unix://*) ;;
    *) say "nothing answers on $DOCKER_HOST, and only a unix socket can be started here"; exit 1 ;;
  esac
  mkdir -p "$DATA_ROOT"
  # Its own exec root and pid file, so a system Docker on the default ones does not clash with it.
  dockerd --storage-driver=vfs --data-root "$DATA_ROOT" --host "$DOCKER_HOST" \
    --exec-root /run/wrs-docker --pidfile /run/wrs-docker.pid >"$DOCKERD_LOG" 2>&1 &
  dockerd_pid=$!
  deadline=$((SECONDS + 120))
  until docker info >/dev/null 2>&1; do
    if ! kill -0 "$dockerd_pid" 2>/dev/null; then
      dockerd_pid=""
      say "dockerd exited; the end of $DOCKERD_LOG:"
      tail -20 "$DOCKERD_LOG" >&2
      exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      say "dockerd did not answer within 120 s; the end of $DOCKERD_LOG:"
      tail -20 "$DOCKERD_LOG" >&2
      exit 1
    fi
    sleep 0.2
  done
  say "started dockerd (pid $dockerd_pid, log $DOCKERD_LOG)"
fi

step "base image"
if docker image inspect "$NODE_IMAGE" >/dev/null 2>&1; then
  say "$NODE_IMAGE exists"
else
  case "$NODE_IMAGE" in
    wrs-local/node:*) ;;
    *) say "$NODE_IMAGE is missing (only wrs-local/node:* is made here)"; exit 1 ;;
  esac
  if [ -z "${EXTRA_CA_DIR:-}" ] && compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    export EXTRA_CA_DIR=/usr/local/share/ca-certificates
  fi
  TAG="$NODE_IMAGE" NODE_VERSION="$(echo "${NODE_IMAGE#*:}" | cut -d- -f1)" sh deploy/docker/make-base-image.sh
fi

step "docker build"
# The legacy builder (DOCKER_BUILDKIT=0): Debian's docker.io 20.10 has no buildx. --network host: only the
# build's `npm ci` reaches out (to the npm registry, as on the host); the test's containers never do.
build() {
  DOCKER_BUILDKIT=0 docker build --network host --force-rm \
    --build-arg NODE_IMAGE="$NODE_IMAGE" "$@" . >"$BUILD_LOG" 2>&1 || {
    say "docker build failed; the end of $BUILD_LOG:"
    tail -40 "$BUILD_LOG" >&2
    return 1
  }
}
build -t "$WRS_IMAGE"
cached=$(grep -c 'Using cache' "$BUILD_LOG" || true)
steps=$(grep -c '^Step ' "$BUILD_LOG" || true)
say "built $WRS_IMAGE: $cached of its $steps steps from the layer cache (ARG and FROM never are; log $BUILD_LOG)"

step "old layers pruned"
build --target build -t "$BUILD_STAGE_IMAGE" # every step from the cache: only names the build stage
# Earlier builds' chains are untagged now; deleting them keeps the data root from growing by every build.
reclaimed=$(docker image prune -f | tail -1)
say "${reclaimed:-nothing to prune}"

step "image test"
npx mocha --no-config --require tsx/cjs --require test/support/hooks.ts --extension ts --timeout 60000 \
  --forbid-only --forbid-pending --reporter spec --exit test/deploy/image.container.ts

step ""
say "timings:"
printf '  %s\n' "${timings[@]}"
