# One image for every process and for `migrate`; the command picks the worker
# (docker-compose.yml builds it once, in the `migrate` service).
FROM node:26-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production MSGX_HTTP_HOST=0.0.0.0
COPY package.json package-lock.json ./
# Behind a TLS-inspecting proxy: its CA certificates (PEM text) as EXTRA_CA_CERTS, trusted by npm
# for this step only (compose: MSGX_BUILD_CA_CERTS). Verification is never turned off. The base
# image's Node runs everything: the `node` package (Node for a host's npm scripts, the only install
# script) is left out (211 MB).
ARG EXTRA_CA_CERTS=""
RUN if [ -n "$EXTRA_CA_CERTS" ]; then printf '%s\n' "$EXTRA_CA_CERTS" >/tmp/extra-ca.pem; export NODE_EXTRA_CA_CERTS=/tmp/extra-ca.pem; fi; \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force && rm -rf /tmp/extra-ca.pem node_modules/node node_modules/.bin/node
COPY lib lib
COPY workers workers
COPY scripts scripts
COPY sql sql
COPY examples/sample examples/sample
COPY Procfile ./
# Resident memory at rest (docs/decisions.md "Footprint", as scripts/start.ts sets them): the
# compile cache filled at build time (no process loads the type stripper), a small young generation,
# two malloc arenas.
ENV NODE_COMPILE_CACHE=/app/.compile-cache NODE_OPTIONS=--max-semi-space-size=1 MALLOC_ARENA_MAX=2
RUN node scripts/compile-cache.ts
# Not root: the image's `node` user (uid 1000) owns nothing it could rewrite in /app.
USER node
CMD ["node", "workers/api.ts"]
