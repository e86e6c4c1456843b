#!/usr/bin/env bash
# Tests the deployment artifacts for real: builds the coordinator and runner images from deploy/Containerfile,
# checks them (size, user, no shell), completes runs through coordinator + runner containers and through
# the compose stack on PostgreSQL, lints the Helm chart and decodes what it renders strictly into the
# Kubernetes API's types. It uses podman (installing it and the rest from Debian's packages when missing)
# and needs no container registry: the Go builder image is made from the machine's Go toolchain and
# busybox, the PostgreSQL image from Debian's packages with debootstrap. Those two images are kept between
# runs (tagged by Go version and by the content that makes them), as are the Go build caches; everything
# else this script makes — containers, volumes, networks, the images it built — is removed when it ends.
#
#   deploy/ci.sh                 run everything
#   deploy/ci.sh clean-cache     remove the kept builder and PostgreSQL images and the build cache mounts
#
# Environment: CONTAINERS_CONF (default deploy/ci/containers.conf: runc and rlimits small machines accept),
# GO_IMAGE (a Go image to build with instead of the locally made one), POSTGRES_IMAGE (likewise),
# DEBOOTSTRAP_MIRROR (a Debian mirror for debootstrap; default: debootstrap's own).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

: "${CONTAINERS_CONF:=$root/deploy/ci/containers.conf}"
export CONTAINERS_CONF

cache_repo=localhost/agent-orchestrator-ci
debian_suite=bookworm

say() { printf '\n== %s (%ds)\n' "$*" "$SECONDS"; }
fail() {
	echo "deploy/ci.sh: FAIL: $*" >&2
	exit 1
}
timings=()
mark() { timings+=("$(printf '%-44s %4ds' "$1" $((SECONDS - ${2})))"); }

# postgres_tag names the PostgreSQL image by the Debian suite and the entrypoint it runs.
postgres_tag() {
	echo "$cache_repo/postgres:$debian_suite-$(sha256sum deploy/ci/postgres-entrypoint.sh | cut -c1-12)"
}

# make_postgres_image TAG builds the PostgreSQL image: a minimal Debian with its postgresql package and
# deploy/ci/postgres-entrypoint.sh, which honours the official image's POSTGRES_* variables.
make_postgres_image() {
	local tag=$1 mnt
	rootfs=$(mktemp -d /var/tmp/ao-ci-rootfs.XXXXXX)
	ctr=
	# Stopped half-way, debootstrap may leave /proc and /sys mounted in the new root: unmount before
	# removing, and never cross into another file system.
	trap 'set +e; grep -o " $rootfs/[^ ]*" /proc/mounts | sort -r | xargs -r umount -l
		rm -rf --one-file-system "$rootfs" "$rootfs.log"; [ -z "$ctr" ] || buildah rm "$ctr" >/dev/null 2>&1' EXIT
	trap 'exit 143' TERM
	# shellcheck disable=SC2086 # the mirror is optional
	debootstrap --variant=minbase --include=postgresql "$debian_suite" "$rootfs" ${DEBOOTSTRAP_MIRROR:-} >"$rootfs.log" 2>&1 ||
		{ tail -n 30 "$rootfs.log"; rm -f "$rootfs.log"; return 1; }
	rm -f "$rootfs.log"
	# The package's own cluster, apt's downloads and the documentation are not needed.
	rm -rf "$rootfs"/var/lib/postgresql/* "$rootfs"/etc/postgresql/* "$rootfs"/var/cache/apt/archives/*.deb \
		"$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc "$rootfs"/usr/share/man "$rootfs"/usr/share/locale
	install -m 0755 deploy/ci/postgres-entrypoint.sh "$rootfs/usr/local/bin/postgres-entrypoint"
	local pgbin
	pgbin=$(cd "$rootfs" && ls -d usr/lib/postgresql/*/bin | sort -V | tail -n 1)
	ctr=$(buildah from scratch)
	mnt=$(buildah mount "$ctr")
	cp -a "$rootfs/." "$mnt/"
	buildah umount "$ctr" >/dev/null
	buildah config --env "PATH=/$pgbin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
		--env PGDATA=/var/lib/postgresql/data --entrypoint '["/usr/local/bin/postgres-entrypoint"]' --cmd '[]' \
		--port 5432 --stop-signal SIGINT --label org.agentorchestrator.ci=postgres "$ctr"
	buildah commit -q --rm "$ctr" "$tag" >/dev/null
	ctr=
}

# make_go_image TAG builds the Go builder image: busybox (a shell and the usual commands), this machine's Go
# toolchain and CA roots, laid out as the official Go image is (GOPATH /go, Go in /usr/local/go).
make_go_image() {
	local tag=$1 goroot mnt
	goroot=$(go env GOROOT)
	builder_ctr=$(buildah from scratch) # removed by cleanup if a step fails
	mnt=$(buildah mount "$builder_ctr")
	mkdir -p "$mnt/bin" "$mnt/usr/local" "$mnt/etc/ssl/certs" "$mnt/tmp" "$mnt/root" "$mnt/go"
	chmod 1777 "$mnt/tmp"
	cp "$(command -v busybox)" "$mnt/bin/busybox"
	chroot "$mnt" /bin/busybox --install -s /bin
	cp -a "$goroot" "$mnt/usr/local/go"
	cp /etc/ssl/certs/ca-certificates.crt "$mnt/etc/ssl/certs/"
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$mnt/etc/passwd"
	printf 'root:x:0:\n' >"$mnt/etc/group"
	buildah umount "$builder_ctr" >/dev/null
	buildah config --env PATH=/go/bin:/usr/local/go/bin:/usr/sbin:/usr/bin:/sbin:/bin --env GOPATH=/go \
		--env GOTOOLCHAIN=local --env HOME=/root --workingdir /go --label org.agentorchestrator.ci=go "$builder_ctr"
	buildah commit -q --rm "$builder_ctr" "$tag" >/dev/null
	builder_ctr=
}

case "${1:-}" in
"") ;;
postgres-image)
	make_postgres_image "$2"
	exit
	;;
clean-cache)
	podman images --filter label=org.agentorchestrator.ci --format '{{.ID}}' | sort -u | xargs -r podman rmi -f
	rm -rf /var/tmp/buildah-cache /var/tmp/buildah-cache-*
	exit
	;;
*) fail "unknown command $1 (want no argument, or clean-cache)" ;;
esac

# --- Tools -----------------------------------------------------------------------------------------------
t=$SECONDS
say "tools"
need=()
for pair in podman:podman buildah:buildah runc:runc podman-compose:podman-compose debootstrap:debootstrap busybox:busybox-static; do
	command -v "${pair%%:*}" >/dev/null || need+=("${pair#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
	command -v apt-get >/dev/null || fail "missing ${need[*]}, and no apt-get to install them"
	echo "installing ${need[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v go >/dev/null || fail "go is not on PATH"
echo "$(podman --version), $(buildah --version | cut -d' ' -f1-3), podman-compose $(podman-compose version 2>/dev/null | sed -n 's/^podman-composer* version *//p' | head -n 1), $(go env GOVERSION)"
mark "tools" $t

# --- Everything this run makes is named after it, and removed at the end ----------------------------------
run=aoci$$
label=org.agentorchestrator.ci.run=$run
coordinator_image=localhost/agent-orchestrator/coordinator:$run
runner_image=localhost/agent-orchestrator/runner:$run
tmp=$(mktemp -d)
pg_pid=
builder_ctr=
compose_env=

cleanup() {
	local rc=$?
	set +e
	say "cleaning up"
	if [ -n "$pg_pid" ] && kill -0 "$pg_pid" 2>/dev/null; then
		kill -TERM -- "-$pg_pid" 2>/dev/null
		wait "$pg_pid" 2>/dev/null
	fi
	if [ -n "$compose_env" ]; then
		(set -a && . "$compose_env" && podman-compose -p "$run" -f deploy/compose.yaml down -v >/dev/null 2>&1)
	fi
	[ -z "$builder_ctr" ] || buildah rm "$builder_ctr" >/dev/null 2>&1
	podman ps -aq --filter "label=$label" | xargs -r podman rm -f -t 5 >/dev/null
	podman ps -aq --filter "label=io.podman.compose.project=$run" | xargs -r podman rm -f -t 5 >/dev/null
	podman volume ls -q --filter "label=$label" | xargs -r podman volume rm -f >/dev/null
	podman volume ls -q --filter "label=io.podman.compose.project=$run" | xargs -r podman volume rm -f >/dev/null
	podman network exists "${run}_default" 2>/dev/null && podman network rm -f "${run}_default" >/dev/null
	podman rmi -f "$coordinator_image" "$runner_image" >/dev/null 2>&1
	rm -rf "$tmp"
	echo
	printf '%s\n' "${timings[@]}"
	if [ "$rc" = 0 ]; then
		echo "deploy/ci.sh: all passed in ${SECONDS}s"
	else
		echo "deploy/ci.sh: FAILED (exit $rc) after ${SECONDS}s"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The PostgreSQL image is made in the background (network and dpkg) while Go compiles.
postgres_image=${POSTGRES_IMAGE:-$(postgres_tag)}
if ! podman image exists "$postgres_image"; then
	[ -z "${POSTGRES_IMAGE:-}" ] || fail "POSTGRES_IMAGE $POSTGRES_IMAGE does not exist"
	echo "making $postgres_image in the background (debootstrap $debian_suite)"
	setsid "$0" postgres-image "$postgres_image" >"$tmp/postgres-image.log" 2>&1 &
	pg_pid=$!
	pg_started=$SECONDS
fi

# --- Images ------------------------------------------------------------------------------------------------
t=$SECONDS
go_image=${GO_IMAGE:-$cache_repo/go:$(go env GOVERSION)}
if ! podman image exists "$go_image"; then
	[ -z "${GO_IMAGE:-}" ] || fail "GO_IMAGE $GO_IMAGE does not exist"
	say "making the builder image $go_image"
	make_go_image "$go_image"
fi
mark "builder image" $t

# The module cache this machine already holds is the build's first module proxy, so a cold build
# downloads nothing the tests did not already; the build cache lives in the Containerfile's cache mounts.
gomodcache=$(go env GOMODCACHE)
mkdir -p "$gomodcache/cache/download"
build() {
	local target=$1 tag=$2 t=$SECONDS
	say "building $target"
	podman build --layers=false -f deploy/Containerfile --target "$target" -t "$tag" \
		--build-arg GO_IMAGE="$go_image" --build-arg GOPROXY="file:///goproxy,$(go env GOPROXY)" \
		-v "$gomodcache/cache/download:/goproxy:ro" --label "$label" . >"$tmp/build-$target.log" 2>&1 ||
		{ tail -n 40 "$tmp/build-$target.log"; fail "building $target"; }
	mark "build $target" $t
}
build coordinator "$coordinator_image"
build runner "$runner_image"

say "checking the images"
for image in "$coordinator_image" "$runner_image"; do
	size=$(podman image inspect --format '{{.Size}}' "$image")
	user=$(podman image inspect --format '{{.Config.User}}' "$image")
	cid=$(podman create --label "$label" "$image")
	podman export "$cid" | tar -t >"$tmp/files"
	podman rm "$cid" >/dev/null
	printf '%-52s %6.1f MB  user %s  %d files; programs: %s\n' "$image" "$(awk "BEGIN{print $size/1000000}")" "$user" \
		"$(grep -vc '/$' "$tmp/files")" "$(grep '^usr/local/bin/.' "$tmp/files" | sed 's|usr/local/bin/||' | tr '\n' ' ')"
	[ "$user" = 65532:65532 ] || fail "$image runs as $user, not the non-root 65532:65532"
	if grep -E '(^|/)(sh|bash|dash|ash|busybox|apt|apt-get|dpkg|apk|rpm|yum|dnf|microdnf)$' "$tmp/files"; then
		fail "$image holds a shell or a package manager (above)"
	fi
done
coordinator_size=$(podman image inspect --format '{{.Size}}' "$coordinator_image")
[ "$coordinator_size" -le 40000000 ] || fail "the coordinator image is $coordinator_size bytes, over 40 MB"

# --- Coordinator + runner containers ----------------------------------------------------------------------
t=$SECONDS
say "coordinator + runner containers (SQLite, read-only root file systems)"
token() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }
admin_token=$(token) client_token=$(token) runner_token=$(token)
podman volume create --label "$label" "$run-data" >/dev/null
podman volume create --label "$label" "$run-work" >/dev/null
podman run -d --name "$run-coordinator" --label "$label" --network host --read-only -v "$run-data:/data" \
	-e ORCHESTRATOR_ADMIN_TOKEN="$admin_token" -e ORCHESTRATOR_CLIENT_TOKEN="$client_token" \
	-e ORCHESTRATOR_RUNNER_TOKEN="$runner_token" "$coordinator_image" -addr=127.0.0.1:0 >/dev/null
addr=
for _ in $(seq 60); do
	addr=$(podman logs "$run-coordinator" 2>&1 | sed -n 's/.*msg="coordinator listening" addr=\([^ ]*\).*/\1/p')
	[ -n "$addr" ] && break
	[ "$(podman inspect --format '{{.State.Running}}' "$run-coordinator")" = true ] || break
	sleep 1
done
[ -n "$addr" ] || { podman logs "$run-coordinator"; fail "the coordinator did not start"; }
url=http://$addr
echo "coordinator at $url"
podman run -d --name "$run-runner" --label "$label" --network host --read-only -v "$run-work:/data" \
	-e ORCHESTRATOR_RUNNER_TOKEN="$runner_token" "$runner_image" -coordinator="$url" >/dev/null

# ao runs from the runner image, on the host's network.
ao() { podman run --rm --label "$label" --network host --entrypoint /usr/local/bin/ao "$runner_image" "$@"; }
# wait_for_agent URL TOKEN NAME waits until a runner announces agent NAME.
wait_for_agent() {
	for _ in $(seq 120); do
		ao --url "$1" --token "$2" agents --json 2>/dev/null | grep -q "\"name\": *\"$3\"" && return 0
		sleep 1
	done
	return 1
}
# check_run OUTPUT WHAT checks that an `ao run --json` output is a completed session.
check_run() {
	grep -q '"status": *"completed"' <<<"$1" || { echo "$1"; fail "$2 did not complete"; }
}
wait_for_agent "$url" "$client_token" file-stats || { podman logs "$run-runner"; fail "the runner did not register"; }
for c in coordinator runner; do
	[ "$(podman top "$run-$c" huser | tail -n +2 | sort -u)" = 65532 ] || fail "the $c does not run as 65532"
	[ "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$run-$c")" = true ] || fail "the $c's root is writable"
	if podman exec "$run-$c" /bin/sh -c true 2>/dev/null; then fail "the $c container has a shell"; fi
done
echo "both run as uid 65532 on read-only root file systems, with no shell to exec"
out=$(ao --url "$url" --token "$client_token" run file-stats -p path=/etc/orchestrator --json)
check_run "$out" "file-stats"
grep -q '"files": *2' <<<"$out" || { echo "$out"; fail "file-stats did not count the image's two blueprints"; }
echo "ao run file-stats: completed in the runner container: $(grep -m1 -o '"session_id": *"[^"]*"' <<<"$out")"
out=$(ao --url "$url" --token "$client_token" run web-crawler -p url="$url/ui/" -p depth=0 --json)
check_run "$out" "web-crawler"
echo "ao run web-crawler: completed (it fetched the dashboard from the runner container)"
ao --url "$url" --token "$admin_token" runners | head -n 3
podman stop -t 45 "$run-runner" >/dev/null
podman logs "$run-runner" 2>&1 | grep -q 'msg=deregistered' || { podman logs "$run-runner"; fail "the runner did not deregister on SIGTERM"; }
podman stop -t 15 "$run-coordinator" >/dev/null
[ "$(podman inspect --format '{{.State.ExitCode}}' "$run-coordinator")" = 0 ] || { podman logs "$run-coordinator"; fail "the coordinator did not stop cleanly"; }
echo "SIGTERM: the runner deregistered and the coordinator exited 0"
podman rm "$run-runner" "$run-coordinator" >/dev/null
mark "containers: run through ao" $t

# --- The compose stack ----------------------------------------------------------------------------------
if [ -n "$pg_pid" ]; then
	t=$SECONDS
	say "waiting for the PostgreSQL image"
	if ! wait "$pg_pid"; then
		pg_pid=
		cat "$tmp/postgres-image.log"
		fail "making the PostgreSQL image"
	fi
	pg_pid=
	mark "PostgreSQL image (waited; $((SECONDS - pg_started))s in all)" $t
fi
t=$SECONDS
say "compose stack: PostgreSQL, coordinator, runner"
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 20000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
	fail "no free port"
}
port=$(free_port)
compose_env=$tmp/compose.env
cat >"$compose_env" <<EOF
POSTGRES_IMAGE=$postgres_image
COORDINATOR_IMAGE=$coordinator_image
RUNNER_IMAGE=$runner_image
POSTGRES_PASSWORD=$(token)
ORCHESTRATOR_ADMIN_TOKEN=$(token)
ORCHESTRATOR_CLIENT_TOKEN=$client_token
ORCHESTRATOR_RUNNER_TOKEN=$(token)
ORCHESTRATOR_WEBHOOK_SECRET=
ORCHESTRATOR_PUBLISH=127.0.0.1:$port
EOF
(set -a && . "$compose_env" && podman-compose -p "$run" -f deploy/compose.yaml up -d --no-build) >"$tmp/compose-up.log" 2>&1 ||
	{ cat "$tmp/compose-up.log"; fail "podman-compose up"; }
url=http://127.0.0.1:$port
wait_for_agent "$url" "$client_token" file-stats || {
	for c in postgres coordinator runner; do podman logs "${run}_${c}_1" 2>&1 | tail -n 20; done
	fail "the compose stack did not come up"
}
podman logs "${run}_coordinator_1" 2>&1 | grep -q '"notifier":true' || fail "the compose coordinator is not on PostgreSQL"
out=$(ao --url "$url" --token "$client_token" run file-stats -p path=/etc/orchestrator --json)
check_run "$out" "file-stats through the compose stack"
grep -q '"files": *2' <<<"$out" || { echo "$out"; fail "file-stats did not count the image's two blueprints"; }
echo "ao run file-stats: completed through the compose stack (coordinator on PostgreSQL, published on $url)"
podman stop -t 45 "${run}_runner_1" >/dev/null
(set -a && . "$compose_env" && podman-compose -p "$run" -f deploy/compose.yaml down -v) >/dev/null 2>&1
podman network rm -f "${run}_default" >/dev/null
compose_env=
mark "compose: up, run, down" $t

# --- The Helm chart -------------------------------------------------------------------------------------
t=$SECONDS
say "Helm chart: lint, template, strict decoding"
export HELM_CACHE_HOME=$tmp/helm/cache HELM_CONFIG_HOME=$tmp/helm/config HELM_DATA_HOME=$tmp/helm/data
mkdir -p "$tmp/rendered"
(
	cd deploy/chart/test
	go vet ./...
	go tool helm version --short
	go tool helm lint --strict ..
	for values in ../ci/*.yaml; do
		go tool helm lint --strict .. -f "$values"
		name=$(basename "$values" .yaml)
		go tool helm template ao .. --namespace orchestrator -f "$values" >"$tmp/rendered/$name.yaml"
		echo "helm template -f ci/$name.yaml: $(grep '^kind:' "$tmp/rendered/$name.yaml" | sort | uniq -c | awk '{printf "%s %s, ", $1, $3}' | sed 's/, $//')"
	done
	# -v for the test's own account of what it decoded; the RUN/PAUSE/CONT lines are noise.
	RENDERED_DIR=$tmp/rendered go test -count=1 -v ./... | grep -v '^=== '
)
mark "helm: lint, template, decode" $t
