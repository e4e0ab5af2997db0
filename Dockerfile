# syntax=docker/dockerfile:1
# classroom-sync as a container: `classroom-sync worker` (sync jobs, plus the HTTP API, queue
# dashboard, /metrics and the /healthz and /readyz probes on PORT). It applies migrations when it starts.
#
#   docker build -t classroom-sync .
#   docker compose up -d            # with PostgreSQL, Redis and the sandbox (see docker-compose.yml)
#
# The image runs the compiled JavaScript (dist/) with plain node: a build stage compiles it, the
# runtime stage holds only production dependencies, dist/ and the migrations.

# Node 24: the LTS line that still gets security fixes (Node 20 reached end of life in April 2026).
# CI runs the suite on Node 20 and 24; test/integration/deploy-files.test.ts keeps this at 24.
ARG NODE_IMAGE=node:24-bookworm-slim

# --- stage 1: every dependency, and `npm run build` (src/ → dist/)
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would build before the sources are here; the build runs below.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build

# --- stage 2: production dependencies only, from the lockfile
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# --- stage 3: the runtime image; no npm cache, no dev dependencies, no sources, no tests
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    PORT=3000 \
    HOST=0.0.0.0
WORKDIR /app
# Owned by root and only readable by the service user: the process cannot rewrite its own code.
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY --from=build /app/dist ./dist
COPY migrations ./migrations
# The official image's unprivileged user (uid 1000).
USER node
EXPOSE 3000
# Liveness only ("the process answers"); /readyz is for load balancers. Uses PORT as the server does.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM drains active jobs for up to SHUTDOWN_GRACE (30s): give `docker stop` longer than that
# (`stop_grace_period` in compose, `--time` for docker stop).
STOPSIGNAL SIGTERM
CMD ["node", "dist/cli/main.js", "worker"]
