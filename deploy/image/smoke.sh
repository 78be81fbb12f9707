#!/usr/bin/env bash
# Runs the built image as a user would and checks it: `kvroute serve --embedded` (no engines
# needed) on 127.0.0.1 (host network) with a read-only root filesystem, /live and /health, a
# completion and a streamed chat completion, the HEALTHCHECK, then SIGTERM during a stream: the
# stream still ends with [DONE], and the container exits 0 with nothing cut and no booking left.
#   deploy/image/smoke.sh [TAG] [PORT]   (defaults: localhost/kvroute:<package version>, 18080)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
version="$(node -p "require('$repo/package.json').version")"
tag="${1:-localhost/kvroute:$version}"
port="${2:-18080}"
base="http://127.0.0.1:$port"
name="kvroute-smoke-$$"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
work="$(mktemp -d)"
cleanup() { podman rm -f "$name" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; podman logs "$name" 2>&1 | tail -20 >&2 || true; exit 1; }
ok() { echo "ok: $*"; }

echo "== the image"
podman image inspect "$tag" --format 'user={{.Config.User}} entrypoint={{json .Config.Entrypoint}} size={{.Size}}' | tee "$work/inspect"
grep -q 'user=10001:10001' "$work/inspect" || fail "the image does not run as uid 10001"
grep -q -- '--max-semi-space-size=8' "$work/inspect" || fail "the entrypoint lacks --max-semi-space-size=8"
podman image inspect "$tag" --format '{{json .Config.Healthcheck}}' | grep -q '/live' || fail "no HEALTHCHECK on /live"
tools="$(podman run --rm --network host --entrypoint sh "$tag" -c 'for t in cargo rustc gcc cc npm; do command -v $t; done; true')"
[ -z "$tools" ] || fail "toolchain in the runtime image: $tools"
node_version="$(podman run --rm --network host --entrypoint node "$tag" --version)"
case "$node_version" in v20.*) ok "Node.js $node_version, no toolchain (cargo, rustc, gcc, cc, npm absent)";; *) fail "Node.js $node_version";; esac

echo "== kvroute serve --embedded on $base"
# Read-only root filesystem, as the Helm chart runs it (podman mounts a tmpfs on /tmp).
# PORT, not --port: the HEALTHCHECK reads it.
podman run -d --name "$name" --network host --read-only -e PORT="$port" "$tag" --embedded --host 127.0.0.1 >/dev/null
for _ in $(seq 1 120); do
  curl -fsS "$base/live" >/dev/null 2>&1 && break
  sleep 0.5
done
curl -fsS "$base/live" > "$work/live" || fail "/live never answered"
ok "/live: $(cat "$work/live")"
for _ in $(seq 1 60); do
  [ "$(curl -s -o "$work/health" -w '%{http_code}' "$base/health")" = 200 ] && break
  sleep 0.5
done
[ "$(curl -s -o "$work/health" -w '%{http_code}' "$base/health")" = 200 ] || fail "/health not 200: $(cat "$work/health")"
ok "/health 200: $(head -c 160 "$work/health")"
podman healthcheck run "$name" >/dev/null && ok "HEALTHCHECK passes" || fail "HEALTHCHECK fails"

code="$(curl -s -D "$work/headers" -o "$work/completion" -w '%{http_code}' "$base/v1/completions" \
  -H 'content-type: application/json' -d '{"model":"kvroute-sim","prompt":"Tell me about KV caches.","max_tokens":16}')"
[ "$code" = 200 ] || fail "completion answered $code: $(cat "$work/completion")"
node -e "const b=JSON.parse(require('fs').readFileSync('$work/completion','utf8')); if (b.object!=='text_completion'||!b.choices[0].text||b.usage.completion_tokens!==16) process.exit(1)" \
  || fail "unexpected completion: $(cat "$work/completion")"
ok "completion 200, 16 tokens, $(grep -i '^x-kvroute-mode:' "$work/headers" | tr -d '\r')"

curl -sN "$base/v1/chat/completions" -H 'content-type: application/json' \
  -d '{"model":"kvroute-sim","messages":[{"role":"user","content":"hi"}],"max_tokens":8,"stream":true}' > "$work/chat"
grep -q '^data: \[DONE\]' "$work/chat" || fail "streamed chat did not end with [DONE]"
ok "streamed chat: $(grep -c '^data: ' "$work/chat") SSE events, ends with [DONE]"

echo "== SIGTERM during a stream"
curl -sN "$base/v1/chat/completions" -H 'content-type: application/json' \
  -d '{"model":"kvroute-sim","messages":[{"role":"user","content":"a long answer please"}],"max_tokens":400,"stream":true}' > "$work/long" &
stream=$!
sleep 1
podman kill --signal TERM "$name" >/dev/null
sleep 0.3
health_code="$(curl -s -o "$work/draining" -w '%{http_code}' "$base/health" || true)"
wait "$stream" || true
exit_code="$(podman wait "$name")"
grep -q '^data: \[DONE\]' "$work/long" || fail "the stream in flight did not finish: $(tail -c 300 "$work/long")"
ok "the stream in flight finished with [DONE] ($(grep -c '^data: ' "$work/long") SSE events)"
if [ "$health_code" = 503 ] && grep -q draining "$work/draining"; then ok "/health while draining: 503 $(head -c 80 "$work/draining")"
else echo "note: /health during the drain answered '$health_code' $(head -c 80 "$work/draining" 2>/dev/null) (the listener may already be closed)"; fi
[ "$exit_code" = 0 ] || fail "exit status $exit_code after SIGTERM"
ok "exit status 0 after SIGTERM"
drained="$(podman logs "$name" 2>&1 | grep -o '[0-9]* requests were in flight, [0-9]* cut, [0-9]* bookings left' || true)"
case "$drained" in *' 0 cut, 0 bookings left') ok "the router's log: $drained";; *) fail "drain log: '$drained'";; esac
echo "smoke passed"
