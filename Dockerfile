# syntax=docker/dockerfile:1
#
# One image for the API, the worker and the operator CLI; the command picks the role:
#   node dist/api/main.js      the HTTP API (listens on API_PORT, default 8080 here)
#   node dist/worker/main.js   a Temporal worker that executes runs
#   node dist/cli/wrs.js ...   the operator CLI (D27)
# See docs/deploy.md and docker-compose.yml.

# Node 24 LTS, pinned to a patch release and a Debian release (the service supports Node 22 and 24; see
# package.json engines). Add the digest (`node:24.21.0-bookworm-slim@sha256:...`) in your release process:
# it cannot be looked up from the machine this file was written on. Bump deliberately, with the tests.
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

# --- sources: the runtime sources, on an empty base. With Docker's vfs storage driver every layer is a full
# copy of everything below it, so these layers hold a few megabytes each, and the build stage takes them in
# one layer instead of copying its node_modules once per source folder.
FROM scratch AS sources
WORKDIR /app
COPY tsconfig.json ./
# Only the runtime sources: tests and the dev tooling (tools/: the local stack, benchmarks) stay out.
COPY activities ./activities
COPY api ./api
COPY cli ./cli
COPY config ./config
COPY domain ./domain
COPY lib ./lib
COPY playground ./playground
COPY store ./store
COPY worker ./worker
COPY workflows ./workflows
COPY tools/scripts/bundle-workflows.ts ./tools/scripts/bundle-workflows.ts
COPY tools/scripts/bundle-playground.ts ./tools/scripts/bundle-playground.ts

# --- build: install everything, compile TypeScript to dist/, bundle the workflows, drop the dev dependencies ---
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY --from=sources /app ./
# The workflow bundle and the playground page are built here once, so workers start without running webpack
# (WORKFLOW_BUNDLE_PATH) and the API serves the page without running esbuild (PLAYGROUND_BUNDLE_DIR).
RUN npm run build \
 && node dist/tools/scripts/bundle-workflows.js dist/workflow-bundle.js \
 && node dist/tools/scripts/bundle-playground.js dist/playground-page \
 && npm prune --omit=dev --no-audit --no-fund \
 && npm cache clean --force

# --- runtime: Debian slim (glibc, which the Temporal core bridge's prebuilt binary needs), non-root ---
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    API_HOST=0.0.0.0 \
    API_PORT=8080 \
    WORKFLOW_BUNDLE_PATH=/app/dist/workflow-bundle.js \
    PLAYGROUND_BUNDLE_DIR=/app/dist/playground-page
WORKDIR /app
# Owned by root and read-only for the service user: nothing here writes to its own files.
COPY package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The example workflows, so an operator can publish the demo from inside the container.
COPY examples ./examples
# Workers load dist/workflow-bundle.js (WORKFLOW_BUNDLE_PATH); dist/workflows stays for replay tooling.
USER node
EXPOSE 8080
CMD ["node", "dist/api/main.js"]
