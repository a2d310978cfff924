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
# Not root: the image's `node` user (uid 1000) owns nothing it could rewrite in /app.
USER node
CMD ["node", "workers/api.ts"]
