# syntax=docker/dockerfile:1
#
# One image for the API, the worker and the operator CLI; the command picks the role:
#   node dist/api/main.js      the HTTP API (listens on API_PORT, default 8080 here)
#   node dist/worker/main.js   a Temporal worker that executes runs
#   node dist/cli/wrs.js ...   the operator CLI (D27)
# See docs/deploy.md and docker-compose.yml.

ARG NODE_VERSION=20

# --- build: install everything, compile TypeScript to dist/, then drop the dev dependencies ---
FROM node:${NODE_VERSION}-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
# Only the runtime sources: tests, benchmarks and the local dev stack (stack/, scripts/) stay out.
COPY activities ./activities
COPY api ./api
COPY cli ./cli
COPY config ./config
COPY domain ./domain
COPY files ./files
COPY metrics ./metrics
COPY net ./net
COPY playground ./playground
COPY store ./store
COPY worker ./worker
COPY workflows ./workflows
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && npm cache clean --force

# --- runtime: Debian slim (glibc, which the Temporal core bridge's prebuilt binary needs), non-root ---
FROM node:${NODE_VERSION}-slim AS runtime
ENV NODE_ENV=production \
    API_HOST=0.0.0.0 \
    API_PORT=8080
WORKDIR /app
# Owned by root and read-only for the service user: nothing here writes to its own files.
COPY package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The example workflows, so an operator can publish the demo from inside the container.
COPY examples ./examples
# The playground's sources: the API bundles them with esbuild on the first request to `/`.
COPY playground ./playground
# The worker bundles its workflow code from dist/workflows at start (require.resolve('../workflows')).
USER node
EXPOSE 8080
CMD ["node", "dist/api/main.js"]
