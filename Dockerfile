# One image for every process and for `migrate`; the command picks the worker
# (docker-compose.yml builds it once, in the `migrate` service).
FROM node:26-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production MSGX_HTTP_HOST=0.0.0.0
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY lib lib
COPY workers workers
COPY scripts scripts
COPY sql sql
COPY Procfile ./
# Resident memory at rest (docs/decisions.md "Footprint", as scripts/start.ts sets them): the
# compile cache filled at build time (no process loads the type stripper), a small young generation,
# two malloc arenas.
ENV NODE_COMPILE_CACHE=/app/.compile-cache NODE_OPTIONS=--max-semi-space-size=1 MALLOC_ARENA_MAX=2
RUN node scripts/compile-cache.ts
# Not root: the image's `node` user (uid 1000) owns nothing it could rewrite in /app.
USER node
CMD ["node", "workers/api.ts"]
