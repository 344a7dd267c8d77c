# syntax=docker/dockerfile:1

# Node 24 (LTS) in the image; the project itself supports Node 20.11 and later.

# Build: compile TypeScript to dist/ (the server's and the agent SDK's). Scripts are skipped at install so that `prepare`
# (which builds) runs once, after the sources are in place.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY sdk/typescript/package.json sdk/typescript/
COPY sdk/website/package.json sdk/website/
RUN npm ci --ignore-scripts
COPY . .
RUN npm run build

# Production dependencies only; --ignore-scripts keeps `prepare` (which needs TypeScript) from running.
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY sdk/typescript/package.json sdk/typescript/
COPY sdk/website/package.json sdk/website/
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

FROM node:24-bookworm-slim
# On SIGTERM /readyz turns 503 at once and the server keeps serving 5 s more, so that the load
# balancer stops routing here before the drain (docs/operations.md, "Failure modes").
ENV NODE_ENV=production DATA_DIR=/data SHUTDOWN_DELAY_SECONDS=5
WORKDIR /app
# Code stays owned by root (read-only to the server); only /data is writable by the `node` user.
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/dist ./dist
# The agent SDK package (an npm workspace): the server takes the protocol's words from it.
COPY --from=build /app/sdk/typescript/package.json ./sdk/typescript/
COPY --from=build /app/sdk/typescript/dist ./sdk/typescript/dist
COPY --from=build /app/views ./views
COPY --from=build /app/migrations ./migrations
RUN mkdir -p /data && chown node:node /data
VOLUME /data
USER node
# 3000: public listener. 3001: admin listener, bound to 127.0.0.1 unless ADMIN_HOST says otherwise.
EXPOSE 3000 3001
# The slim image has no curl; Node's fetch does the probe. A first start on a new embedded store creates the
# database: 22 s on a quiet 2-core machine, over a minute on a busy one; the start period covers 3 minutes
# (a probe that passes earlier ends it at once).
HEALTHCHECK --interval=30s --timeout=5s --start-period=180s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz',{signal:AbortSignal.timeout(4000)}).then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
# Migrations run at start; SIGTERM waits SHUTDOWN_DELAY_SECONDS, then drains requests and closes the store within 10 s.
# The V8 flags are npm start's: a smaller young generation and a slower-growing heap keep the
# resident size near 110 MB under load instead of 190 MB, at no measurable CPU cost (bench/README.md).
CMD ["node", "--max-semi-space-size=4", "--heap-growing-percent=50", "dist/main.js"]
