#!/usr/bin/env bash
# Builds the images docker/test.sh (and the partition scenarios) run, without any container
# registry: this machine reaches none, so nothing can be pulled.
#
#   samsa-test/debian:bookworm   Debian bookworm (minbase) from debootstrap, `docker import`ed
#   samsa-test/zookeeper:3.8     Debian's zookeeper package on it, with the official
#                                zookeeper image's conventions (docker/zookeeper-entrypoint.sh)
#   samsa-test/kcat:local        Debian's kcat on the base: a client container
#   samsa-test/samsa:local       ./cmd/samsa built on the host (CGO_ENABLED=0) on the base,
#                                laid out as docker/Dockerfile's image
#   samsa-test/samsa:dockerfile  (`images.sh dockerfile` only) docker/Dockerfile itself, built
#                                on stand-ins for golang and distroless (samsa-test/golang:local,
#                                the host's Go; the Debian base)
#
# The base and ZooKeeper images are built once per machine: they stay in docker's image store,
# and their root file systems are also kept as tarballs in $SAMSA_DOCKER_CACHE
# (/var/cache/samsa-docker) so a wiped image store does not mean a new debootstrap. The samsa
# image is rebuilt every run (a few seconds: the binary is the only layer that changes).
# Environment: DEBIAN_MIRROR (http://deb.debian.org/debian); SAMSA_BINARY, a static samsa
# binary to put in the image instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

cache=${SAMSA_DOCKER_CACHE:-/var/cache/samsa-docker}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
base_image=samsa-test/debian:bookworm
zk_rootfs_image=samsa-test/zookeeper-rootfs:3.8
zk_image=samsa-test/zookeeper:3.8
samsa_image=samsa-test/samsa:local
tools_image=samsa-test/kcat:local
golang_image=samsa-test/golang:local
dockerfile_image=samsa-test/samsa:dockerfile

log() { printf '%s images.sh: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}
# quiet_build -t IMAGE ARGS...: docker build, its output shown only when it fails. The image
# IMAGE named before is removed when the build replaced it (unless a container still uses it),
# so repeated runs do not pile up untagged images.
quiet_build() {
	local out old new
	old=$(docker image inspect -f '{{.Id}}' "$2" 2>/dev/null) || old=
	out=$(docker build "$@" 2>&1) || {
		printf '%s\n' "$out" >&2
		die "docker build $* failed"
	}
	new=$(docker image inspect -f '{{.Id}}' "$2" 2>/dev/null) || new=
	if [ -n "$old" ] && [ "$old" != "$new" ]; then
		docker rmi "$old" >/dev/null 2>&1 || true
	fi
}
have_image() { docker image inspect "$1" >/dev/null 2>&1; }

ensure_host_tools() {
	local missing=()
	command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" = 0 ] || die "missing ${missing[*]}: run as root (debootstrap needs it) or install them"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2 ||
		die "apt-get install ${missing[*]} failed"
}

# import_rootfs DIR TARBALL IMAGE: tars DIR (kept as TARBALL) and imports it as IMAGE.
import_rootfs() {
	local dir=$1 tarball=$2 image=$3
	tar -C "$dir" --numeric-owner -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
	docker import "$tarball" "$image" >/dev/null
}

# clean_rootfs DIR: drops apt's caches and lists (an image needs neither).
clean_rootfs() {
	rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/* "$1"/var/log/*.log "$1"/tmp/*
}

build_base() {
	if have_image "$base_image"; then
		return 0
	fi
	mkdir -p "$cache"
	if [ -s "$cache/debian-bookworm.tar" ]; then
		log "importing $base_image from $cache/debian-bookworm.tar"
		docker import "$cache/debian-bookworm.tar" "$base_image" >/dev/null
		return 0
	fi
	ensure_host_tools
	local dir=$cache/rootfs-base
	rm -rf "$dir"
	log "debootstrap bookworm (minbase) from $mirror: about a minute"
	debootstrap --variant=minbase bookworm "$dir" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
		die "debootstrap failed (log: $cache/debootstrap.log)"
	clean_rootfs "$dir"
	import_rootfs "$dir" "$cache/debian-bookworm.tar" "$base_image"
	rm -rf "$dir"
	log "built $base_image"
}

# chroot_image IMAGE TARBALL PACKAGE...: Debian packages installed into a copy of the base
# root file system with chroot on the host, which reaches the Debian mirror (a container
# build would need the bridge network to reach it too), imported as IMAGE.
chroot_image() {
	local image=$1 name=${2%.tar} tarball=$cache/$2
	shift 2
	if have_image "$image"; then
		return 0
	fi
	if [ -s "$tarball" ]; then
		log "importing $image from $tarball"
		docker import "$tarball" "$image" >/dev/null
		return 0
	fi
	[ -s "$cache/debian-bookworm.tar" ] || die "no $cache/debian-bookworm.tar (build_base keeps it)"
	[ "$(id -u)" = 0 ] || die "building $image needs root (chroot)"
	local dir=$cache/rootfs-$name ok=0
	rm -rf "$dir"
	mkdir -p "$dir"
	tar -C "$dir" -xf "$cache/debian-bookworm.tar"
	cp /etc/resolv.conf "$dir/etc/resolv.conf"
	mount -t proc proc "$dir/proc"
	log "installing $* into $image: a minute or two"
	{
		chroot "$dir" apt-get update &&
			DEBIAN_FRONTEND=noninteractive chroot "$dir" apt-get install -y --no-install-recommends "$@"
	} >"$cache/$name.log" 2>&1 || ok=$?
	umount "$dir/proc"
	[ "$ok" = 0 ] || die "installing $* failed (log: $cache/$name.log)"
	: >"$dir/etc/resolv.conf"
	clean_rootfs "$dir"
	import_rootfs "$dir" "$tarball" "$image"
	rm -rf "$dir"
	log "built $image"
}

build_zookeeper() {
	chroot_image "$zk_rootfs_image" zookeeper-bookworm.tar zookeeper libslf4j-java default-jre-headless
	# The entrypoint layer is cheap: rebuild it every run so script edits take effect.
	quiet_build -t "$zk_image" -f docker/zookeeper.Dockerfile --build-arg "BASE=$zk_rootfs_image" docker
}

build_samsa() {
	command -v go >/dev/null 2>&1 || PATH=$PATH:/usr/local/go/bin
	local ctx
	ctx=$(mktemp -d)
	trap 'rm -rf "$ctx"' RETURN
	if [ -n "${SAMSA_BINARY:-}" ]; then
		cp "$SAMSA_BINARY" "$ctx/samsa" # built by the caller (CGO_ENABLED=0)
	else
		(cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$ctx/samsa" ./cmd/samsa) || die "go build ./cmd/samsa failed"
	fi
	cp docker/local.Dockerfile "$ctx/Dockerfile"
	quiet_build -t "$samsa_image" --build-arg "BASE=$base_image" "$ctx"
}

# build_golang: a stand-in for the golang image docker/Dockerfile's build stage starts from:
# the host's Go and CA certificates (the build downloads modules) on the base. Cached.
build_golang() {
	have_image "$golang_image" && return 0
	local goroot ctx
	goroot=$(go env GOROOT) || die "no Go on the host"
	ctx=$(mktemp -d)
	cp -a "$goroot" "$ctx/go"
	cp /etc/ssl/certs/ca-certificates.crt "$ctx/" || die "no /etc/ssl/certs/ca-certificates.crt (Debian's ca-certificates)"
	cat >"$ctx/Dockerfile" <<EOF
FROM $base_image
COPY go /usr/local/go
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
ENV PATH=/usr/local/go/bin:/root/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin GOTOOLCHAIN=local
EOF
	log "building $golang_image from the host's Go ($goroot)"
	quiet_build -t "$golang_image" "$ctx"
	rm -rf "$ctx"
}

# build_dockerfile: docker/Dockerfile itself, as a user builds it, with local stand-ins for
# its two upstream images (golang: the host's Go; distroless: the Debian base). A few minutes:
# the build stage compiles from scratch.
build_dockerfile() {
	build_golang
	log "building $dockerfile_image from docker/Dockerfile (the Go build runs in a container: a few minutes)"
	quiet_build -t "$dockerfile_image" --build-arg "GO_IMAGE=$golang_image" \
		--build-arg "RUNTIME_IMAGE=$base_image" -f docker/Dockerfile .
}

docker info >/dev/null 2>&1 || die "no docker daemon answers (docker/test.sh starts one)"
# One build at a time per machine: docker/test.sh and the partition scenarios may run together.
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
what=${1:-all}
case $what in
base) build_base ;;
zookeeper) build_base && build_zookeeper ;;
samsa) build_base && build_samsa ;;
kcat) build_base && chroot_image "$tools_image" kcat-bookworm.tar kcat ;;
all) build_base && build_zookeeper && chroot_image "$tools_image" kcat-bookworm.tar kcat && build_samsa ;;
dockerfile) build_base && build_dockerfile ;;
*) die "usage: docker/images.sh [all|base|zookeeper|kcat|samsa|dockerfile]" ;;
esac
