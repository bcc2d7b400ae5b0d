# The Icefloe worker image. Node 24 runs the TypeScript sources directly (type stripping): no build step.
# Stage 1 builds the native Kafka addon (librdkafka from source, linked against Debian's libraries).
FROM node:24-bookworm-slim AS deps
RUN apt-get update && apt-get install -y --no-install-recommends \
      g++ make python3 pkg-config zlib1g-dev libssl-dev libzstd-dev liblz4-dev libsasl2-dev libcurl4-openssl-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/patch-kafka-binding.ts ./scripts/
# The patch keeps a null Kafka header value null in the client's native layer (see the script).
RUN CKJS_LINKING=dynamic npm ci --omit=dev --no-audit --no-fund && node scripts/patch-kafka-binding.ts

# Stage 2: runtime libraries only, a non-root user, the worker's sources. Only src/ is copied: tools/ (the
# test-data generator behind `icefloe generate`) is a development tool outside the worker's import graph, so
# the image leaves it out and `icefloe generate` there says so.
FROM node:24-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends \
      zlib1g libssl3 libzstd1 liblz4-1 libsasl2-2 libcurl4 ca-certificates tini \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY src ./src
USER node
# The Kafka Connect REST API (worker property `listeners`, default http://:8083).
EXPOSE 8083
ENTRYPOINT ["/usr/bin/tini", "--", "node", "src/cli.ts"]
CMD ["help"]
