#!/usr/bin/env bash
# The real tools the Helm chart and its alert rules are checked with (docs/deploy.md), from the
# registries this machine reaches, once into infra/local/.cache/ops-tools/ (git-ignored):
#   helm      helm.sh/helm/v4 from the Go module proxy, built with the machine's Go
#   promtool  github.com/prometheus/prometheus/cmd/promtool, the same way
#   jaeger    github.com/jaegertracing/jaeger/cmd/jaeger (Jaeger v2, a real OTLP receiver for the
#             tracing spec), built in a module of its own (`go get -tool`: its go.mod has replace
#             directives, which `go install pkg@version` refuses)
#   validator a Python venv with kubernetes-validate (the Kubernetes API schemas, offline) from PyPI
#   crds      the CustomResourceDefinitions the chart's objects must satisfy, as their projects
#             publish them: KEDA's and the Prometheus operator's from their Go modules' zips, Strimzi's
#             KafkaTopic from the io.strimzi:api tests jar on Maven Central; each archive's sha256
#             checked before anything of it is used.
#   infra/local/ops-tools.sh install   (default)   prints each step; idempotent
#   infra/local/ops-tools.sh path                  prints the directory
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
DIR="$HERE/.cache/ops-tools"
HELM_VERSION=v4.3.2
PROMETHEUS_VERSION=v0.316.0
JAEGER_VERSION=v1.75.0
KUBERNETES_VALIDATE_VERSION=1.37.0
KEDA_VERSION=v2.21.1
KEDA_SHA256=872fa4b9d4282969ece753727ca31a7a31eaf341a52fa0972148297521ca9a75
PROMETHEUS_OPERATOR_VERSION=v0.85.0
PROMETHEUS_OPERATOR_SHA256=0bdb88ed823d0f2e86cf909638439b6ad1da744a228172c7411d9987527dc5d1
# Strimzi 1.2.0 defines KafkaTopic in v1 only, byte for byte the CRD this tests jar carries.
STRIMZI_TESTS_VERSION=0.51.0
STRIMZI_TESTS_SHA256=b99f69303dc507ca505b74345d93f5260621bb084b8b79447f726e54b6e66a1d

say() { echo "[ops-tools] $*"; }

# A Go program at a version, built once (the Go build cache makes a rebuild a link).
go_tool() {
  local name="$1" package="$2" version="$3" marker="$DIR/bin/.$1-$3"
  if [ -x "$DIR/bin/$name" ] && [ -f "$marker" ]; then return; fi
  command -v go >/dev/null || { say "go is not installed: $name is built from $package@$version" >&2; exit 2; }
  say "building $name from $package@$version (minutes the first time)"
  GOBIN="$DIR/bin" GOFLAGS=-mod=mod GOTOOLCHAIN=local go install "$package@$version"
  touch "$marker"
}

# A Go program whose module must be required from a module of ours.
go_module_tool() {
  local name="$1" package="$2" version="$3" marker="$DIR/bin/.$1-$3" module="$DIR/modules/$1"
  if [ -x "$DIR/bin/$name" ] && [ -f "$marker" ]; then return; fi
  command -v go >/dev/null || { say "go is not installed: $name is built from $package@$version" >&2; exit 2; }
  say "building $name from $package@$version (minutes the first time)"
  rm -rf "$module" && mkdir -p "$module"
  (cd "$module" && GOTOOLCHAIN=local go mod init "gm-ops-$name" >/dev/null 2>&1 \
    && GOTOOLCHAIN=local go get -tool "$package@$version" && GOTOOLCHAIN=local go build -o "$DIR/bin/$name" "$package")
  touch "$marker"
}

# Fetches a URL into a file and refuses it unless its sha256 is the one given.
fetch_checked() {
  local url="$1" sha="$2" out="$3"
  [ -f "$out" ] && echo "$sha  $out" | sha256sum -c --status && return
  say "fetching $url"
  curl -fsSL --retry 3 -o "$out.part" "$url"
  if ! echo "$sha  $out.part" | sha256sum -c --status; then
    say "$url: sha256 $(sha256sum "$out.part" | cut -d' ' -f1), expected $sha" >&2
    rm -f "$out.part"
    exit 1
  fi
  mv "$out.part" "$out"
}

# Copies the files of an archive whose paths end in the given suffixes into crds/.
extract_crds() {
  local archive="$1"; shift
  python3 - "$archive" "$DIR/crds" "$@" <<'PY'
import os, sys, zipfile
archive, out, suffixes = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(archive) as z:
    for suffix in suffixes:
        names = [n for n in z.namelist() if n.endswith(suffix)]
        if len(names) != 1:
            sys.exit(f"{archive}: {len(names)} entries end in {suffix}")
        with open(os.path.join(out, os.path.basename(suffix)), "wb") as f:
            f.write(z.read(names[0]))
PY
}

install() {
  mkdir -p "$DIR/bin" "$DIR/crds" "$DIR/archives"
  go_tool helm helm.sh/helm/v4/cmd/helm "$HELM_VERSION"
  go_tool promtool github.com/prometheus/prometheus/cmd/promtool "$PROMETHEUS_VERSION"
  go_module_tool jaeger github.com/jaegertracing/jaeger/cmd/jaeger "$JAEGER_VERSION"
  if [ ! -f "$DIR/venv/.kubernetes-validate-$KUBERNETES_VALIDATE_VERSION" ]; then
    say "installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION into a venv"
    python3 -m venv "$DIR/venv"
    "$DIR/venv/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
    touch "$DIR/venv/.kubernetes-validate-$KUBERNETES_VALIDATE_VERSION"
  fi
  local keda="$DIR/archives/keda-$KEDA_VERSION.zip" promop="$DIR/archives/prometheus-operator-$PROMETHEUS_OPERATOR_VERSION.zip"
  local strimzi="$DIR/archives/strimzi-api-$STRIMZI_TESTS_VERSION-tests.jar"
  fetch_checked "https://proxy.golang.org/github.com/kedacore/keda/v2/@v/$KEDA_VERSION.zip" "$KEDA_SHA256" "$keda"
  fetch_checked "https://proxy.golang.org/github.com/prometheus-operator/prometheus-operator/@v/$PROMETHEUS_OPERATOR_VERSION.zip" "$PROMETHEUS_OPERATOR_SHA256" "$promop"
  fetch_checked "https://repo1.maven.org/maven2/io/strimzi/api/$STRIMZI_TESTS_VERSION/api-$STRIMZI_TESTS_VERSION-tests.jar" "$STRIMZI_TESTS_SHA256" "$strimzi"
  extract_crds "$keda" config/crd/bases/keda.sh_scaledobjects.yaml
  extract_crds "$promop" example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml
  extract_crds "$strimzi" crds/v1/043-Crd-kafkatopic.yaml
  say "ready in $DIR: helm $HELM_VERSION, promtool $PROMETHEUS_VERSION, jaeger $JAEGER_VERSION, kubernetes-validate $KUBERNETES_VALIDATE_VERSION, $(ls "$DIR/crds" | wc -l) CRDs"
}

case "${1:-install}" in
  install) install ;;
  path) echo "$DIR" ;;
  *) say "usage: $0 [install|path]" >&2; exit 2 ;;
esac
