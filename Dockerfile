# One image for every service; the command picks the service (see docker-compose.yml).
FROM node:24-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/* \
 && npm install -g pnpm@12.4.2
WORKDIR /app
COPY . .
# better-sqlite3 builds against the headers of this Node (the embedded runtime needs it too).
RUN npm_config_nodedir=/usr/local GM_BROWSER=0 bash scripts/setup.sh
ENV NODE_ENV=production
USER node
CMD ["node", "--import", "tsx", "--import", "./packages/observability/src/register-tracing.ts", "apps/embedded/src/main.ts"]
