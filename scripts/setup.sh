#!/usr/bin/env bash
# One-time setup on a fresh machine with Node 20 and npm: pnpm, then the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version)" != "12.4.2" ]; then
  echo "== installing pnpm 12.4.2 (npm install -g)"
  npm install -g pnpm@12.4.2
fi

# better-sqlite3 builds its native addon with node-gyp, which needs the Node headers. Use the
# ones installed next to this Node (e.g. /usr/include/node) instead of downloading them.
NODE_PREFIX="$(node -p 'require("path").resolve(process.execPath, "..", "..")')"
if [ -z "${npm_config_nodedir:-}" ] && [ -f "$NODE_PREFIX/include/node/node.h" ]; then
  export npm_config_nodedir="$NODE_PREFIX"
fi
echo "== pnpm install (builds better-sqlite3 from source: about a minute the first time)"
pnpm install --frozen-lockfile
