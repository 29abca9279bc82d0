# syntax=docker/dockerfile:1
# Countersign: multi-stage build on Node 20.
#
#   docker build -t countersign .
#   docker run --rm --init -e SLACK_BOT_TOKEN -e SLACK_APP_TOKEN -e SLACK_CHANNEL \
#     -e MSP_HOST_COMMAND -e REDIS_URL=redis://redis:6379 -p 3000:3000 countersign
#
# `node` runs as the container's main process, so `docker stop` (SIGTERM) reaches it and
# Countersign shuts down cleanly. Run it with `docker run --init` (Compose: `init: true`): the
# tiny init reaps the MSP host's exited children, which would otherwise stay zombies in the
# host's process group and make shutdown wait for them until its budget runs out.
#
# MSP_HOST_COMMAND runs inside this container: extend this image with your agent host
# (for example `FROM countersign` + install `muse`), or mount it in.

FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig*.json ./
COPY src ./src
RUN npm run build

FROM node:20-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force
COPY --from=build /app/dist ./dist
USER node
ENV PORT=3000
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"]
# Small young generation: a burst then costs far less resident memory, for some CPU
# (docs/performance.md, "Memory"). Keep in step with the start script in package.json.
CMD ["node", "--max-semi-space-size=2", "dist/main.js"]
