# One image for every process; the command picks the worker (see docker-compose.yml).
FROM node:26-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY lib lib
COPY workers workers
COPY scripts scripts
COPY sql sql
ENV MSGX_HTTP_HOST=0.0.0.0
CMD ["node", "workers/api.ts"]
