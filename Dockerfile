# syntax=docker/dockerfile:1
# Countersign: multi-stage build on Node 24, the Active LTS.
#
#   docker build -t countersign \
#     --build-arg VERSION="$(node -p "require('./package.json').version")" \
#     --build-arg REVISION="$(git rev-parse HEAD)" \
#     --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
#     --build-arg SOURCE="$(git remote get-url origin)" .
#   docker run --rm -e SLACK_BOT_TOKEN -e SLACK_APP_TOKEN -e SLACK_CHANNEL \
#     -e MSP_HOST_COMMAND -e REDIS_URL=redis://redis:6379 -p 3000:3000 countersign
#
# Both stages use the same image, pinned by its multi-arch manifest-list digest so that a build
# today and a build next month run the same Node and Debian. The digest is the one Docker Hub gave
# for node:24.15.0-bookworm-slim (then also node:24-bookworm-slim) on 2026-05-21 (`docker buildx
# imagetools inspect`, quoted in openclaw/openclaw#84981); the exact version in the tag says which
# Node it holds. It does not move by itself: let
# Renovate (docker digest updates) or Dependabot (package-ecosystem "docker") bump both lines
# together, since the tag keeps receiving Node and Debian security fixes.
# bookworm-slim rather than alpine: tini comes from Debian's archive, and hosts built for glibc run.
#
# MSP_HOST_COMMAND runs inside this container, as the bot's user. deploy/ and docker-compose.yml run
# the host in a container of its own, as another user, and make MSP_HOST_COMMAND a socat bridge to
# its socket (docs/operations.md); for a host in this container instead, extend this image
# (`FROM countersign`, then install `muse`), knowing the agent can then read the bot's secrets.

FROM node:24.15.0-bookworm-slim@sha256:4e6b70dd6cbfc88c8157ba19aa3d9f9cce6ba4703576d55459e45efcbc9c5f5d AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig*.json ./
COPY src ./src
RUN npm run build

FROM node:24.15.0-bookworm-slim@sha256:4e6b70dd6cbfc88c8157ba19aa3d9f9cce6ba4703576d55459e45efcbc9c5f5d AS runtime
# tini as PID 1: it reaps the MSP host's exited children, which would otherwise stay zombies in the
# host's process group and make shutdown wait out its whole budget. Kubernetes has no init option
# like Docker's, so the init must be in the image. It passes SIGTERM on to node.
# socat: the bridge from the bot to an MSP host in another container (deploy/, docker-compose.yml).
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini socat \
  && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force
COPY --from=build /app/dist ./dist

# Build arguments change on every build: declared last, so the layers above stay cached.
ARG VERSION=""
ARG REVISION=""
ARG CREATED=""
ARG SOURCE=""
# The project states no licence yet: NOASSERTION is SPDX's word for "not stated".
LABEL org.opencontainers.image.title="countersign" \
  org.opencontainers.image.description="Slack approvals for AI coding agents: MSP approval prompts become Slack cards, clicks become approval/decide." \
  org.opencontainers.image.source="${SOURCE}" \
  org.opencontainers.image.licenses="NOASSERTION" \
  org.opencontainers.image.version="${VERSION}" \
  org.opencontainers.image.revision="${REVISION}" \
  org.opencontainers.image.created="${CREATED}"

USER node
ENV PORT=3000
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
# Keep in step with the start script in package.json (a test compares them):
# --enable-source-maps: the build emits source maps (tsconfig.json), so a stack trace in the log
#   names the src/*.ts file and line a developer opens. Node reads the maps at start-up and
#   applies them only when a stack is formatted: on failures, not per approval.
# --max-semi-space-size=2: a small young generation; a burst then costs far less resident memory,
#   for some CPU (docs/performance.md, "Memory").
CMD ["node", "--enable-source-maps", "--max-semi-space-size=2", "dist/main.js"]
