# mufold: one image for every command (fold, serve, setup, replay, …).
#
#   docker build -t mufold:0.1.0 .
#   docker run --rm mufold:0.1.0 --version
#   docker run -e KAFKA_BROKERS=… -e REDIS_URL=… mufold:0.1.0                 # fold, HTTP on :8080
#   docker run -e REDIS_URL=… mufold:0.1.0 serve --port 8080 --host 0.0.0.0   # the HTTP reader
#
# Node 24 (slim: Debian, glibc, which the prebuilt zstd binding of
# @mongodb-js/zstd needs): the fastest of 20, 22 and 24 for the fold side by side
# (docs/benchmarks.md), an LTS, and one the unit and reference tiers run on
# (scripts/node-versions.sh). Keep NODE_VERSION equal to the 24 entry there
# (test/integration/deploy-layout.int.spec.ts checks it).
ARG NODE_VERSION=24.22.3

# ---- build: compile TypeScript to dist/ ---------------------------------------
FROM node:${NODE_VERSION}-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: no dependency needs an install script, and none should run unseen.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/copy-assets.mjs scripts/
COPY src src
COPY consumers consumers
COPY producers producers
RUN npm run build

# ---- runtime: production dependencies and the compiled code only -------------
FROM node:${NODE_VERSION}-slim AS runtime
ENV NODE_ENV=production
# jemalloc under every process: glibc's malloc keeps what the fold's decompressed batches
# freed, in one heap per thread, so a worker's RSS grew with the records it had read
# (IMAGE_ALLOCATOR in consumers/fold/fold-process.ts; docs/benchmarks.md). One path on every architecture.
RUN apt-get update && apt-get install -y --no-install-recommends libjemalloc2 && rm -rf /var/lib/apt/lists/* && ln -s "/usr/lib/$(uname -m)-linux-gnu/libjemalloc.so.2" /usr/local/lib/libjemalloc.so.2
ENV LD_PRELOAD=/usr/local/lib/libjemalloc.so.2
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: no production dependency needs an install script (zstd ships prebuilt per platform).
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist dist
COPY bin bin
# Files stay root-owned (the process cannot rewrite its own code); it runs as the
# image's unprivileged "node" user, by number so that Kubernetes' runAsNonRoot can check it.
USER 1000:1000
EXPOSE 8080
# The flags of bin/mufold.js's shebang (a 32 MiB young generation and no allocation-site
# pretenuring: consumers/fold/fold-process.ts, docs/operations.md "Capacity");
# --max-old-space-size is per deployment (NODE_OPTIONS, or the command as
# deploy/k8s/fold.yaml sets it).
ENTRYPOINT ["node", "--max-semi-space-size=32", "--no-allocation-site-pretenuring", "bin/mufold.js"]
CMD ["fold", "--http-port", "8080", "--http-host", "0.0.0.0"]
# Liveness: the process answers HTTP (no curl in slim images: Node's fetch). A command
# without HTTP (setup, replay) has no /healthz: run those with --no-healthcheck
# or as one-shot jobs, where the health check does not matter.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/healthz', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
