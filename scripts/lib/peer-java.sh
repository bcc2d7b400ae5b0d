#!/usr/bin/env bash
# The Java side of `npm run bench:peer` (scripts/bench-peer.ts): a Kafka Connect worker with the Apache
# Iceberg sink, assembled from Maven Central into $ICEFLOE_CACHE like the stack's own Java services, never
# into the repository.
#
#   bash scripts/lib/peer-java.sh install   install what is missing (idempotent, works from an empty cache),
#                                           then print KEY=value lines: JAVA, CONNECT_LIB, PLUGIN_PATH, versions
#
# What it assembles (versions in scripts/stack.env):
#   connect-$KAFKA_VERSION                 connect-runtime + log4j2: the stack's own reference worker install
#                                          (scripts/stack.d/connect.sh), reused as is: the worker's classpath
#   iceberg-kafka-connect-$ICEBERG_VERSION the sink plugin (plugin.path, its own class loader): iceberg-kafka-connect
#                                          (+ -events, core, data, common) and what the Apache runtime
#                                          distribution adds, which Maven Central does not publish as one
#                                          artifact: iceberg-parquet and iceberg-orc (file formats), iceberg-aws +
#                                          iceberg-aws-bundle (S3FileIO), the shaded Hadoop client pair (parquet's
#                                          Configuration)
#   apicurio-converter-$PEER_CONVERTER_VERSION  the value converter plugin: Apicurio's AvroConverter. Confluent's
#                                          converter is not on Maven Central, and Apicurio's 3.x converter is not
#                                          there whole (3.0.9 lacks its parent POM, later 3.x lack the converter), so
#                                          the 2.6 line, which reads Confluent framing (magic byte + 4-byte id)
#                                          against the registry's v2 API (served by the stack's Apicurio 3.3.3).
# The Kafka client and Connect API jars a plugin's POM drags in are excluded: the worker's own are used
# (Connect loads org.apache.kafka.* from the worker's class loader anyway).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$ICEFLOE_ROOT/scripts/stack.d/connect.sh"

# maven_dep_without GROUP ARTIFACT VERSION EXCLUDED...: a <dependency> whose listed group:artifact
# dependencies (transitive ones included) are left out.
maven_dep_without() {
  local g=$1 a=$2 v=$3 x; shift 3
  printf '<dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version><exclusions>' "$g" "$a" "$v"
  for x in "$@"; do printf '<exclusion><groupId>%s</groupId><artifactId>%s</artifactId></exclusion>' "${x%%:*}" "${x#*:}"; done
  printf '</exclusions></dependency>'
}

# What the worker provides to every plugin.
WORKER_PROVIDED=(org.apache.kafka:kafka-clients org.apache.kafka:connect-api org.apache.kafka:connect-json org.slf4j:slf4j-api)

sink_home() { echo "$ICEFLOE_CACHE/iceberg-kafka-connect-$ICEBERG_VERSION"; }
converter_home() { echo "$ICEFLOE_CACHE/apicurio-converter-$PEER_CONVERTER_VERSION"; }

sink_install() {
  local i=org.apache.iceberg
  maven_copy_deps "$(sink_home)" \
    "$(maven_dep_without $i iceberg-kafka-connect "$ICEBERG_VERSION" "${WORKER_PROVIDED[@]}")" \
    "$(maven_dep_without $i iceberg-kafka-connect-events "$ICEBERG_VERSION" "${WORKER_PROVIDED[@]}")" \
    "$(maven_dep_without $i iceberg-parquet "$ICEBERG_VERSION" "${WORKER_PROVIDED[@]}")" \
    "$(maven_dep_without $i iceberg-orc "$ICEBERG_VERSION" "${WORKER_PROVIDED[@]}")" \
    "$(maven_dep_without $i iceberg-aws "$ICEBERG_VERSION" "${WORKER_PROVIDED[@]}")" \
    "$(maven_dep_without $i iceberg-aws-bundle "$ICEBERG_VERSION" "${WORKER_PROVIDED[@]}")" \
    "$(maven_dep_without org.apache.hadoop hadoop-client-api "$HADOOP_VERSION" "${WORKER_PROVIDED[@]}")" \
    "$(maven_dep_without org.apache.hadoop hadoop-client-runtime "$HADOOP_VERSION" "${WORKER_PROVIDED[@]}")"
}

converter_install() {
  maven_copy_deps "$(converter_home)" \
    "$(maven_dep_without io.apicurio apicurio-registry-utils-converter "$PEER_CONVERTER_VERSION" "${WORKER_PROVIDED[@]}")"
  # The converter's jars declare no ServiceLoader manifest (the Iceberg sink's and Connect's own plugins
  # do): one more jar holding only that manifest lets the worker find every plugin with
  # plugin.discovery=service_load instead of scanning every class of the plugin path (~150 MB of jars,
  # tens of CPU-seconds at each start), what Kafka's `connect-plugin-path sync-manifests` does.
  local jar; jar="$(converter_home)/lib/icefloe-converter-manifest.jar"
  [ -f "$jar" ] && return 0
  python3 - "$jar.tmp" <<'PY' && mv "$jar.tmp" "$jar"
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    z.writestr("META-INF/services/org.apache.kafka.connect.storage.Converter", "io.apicurio.registry.utils.converter.AvroConverter\n")
PY
}

case "${1:-}" in
  install)
    [ -x "$(java17)" ] || die "Java 17 not found at $(java17) (apt package openjdk-17-jre-headless)"
    connect_installed || { log "$(connect_what)"; connect_install; }
    is_done "$(sink_home)" || log "installing the Apache Iceberg Kafka Connect sink $ICEBERG_VERSION (jars from Maven Central)"
    sink_install
    is_done "$(converter_home)" || log "installing Apicurio's AvroConverter $PEER_CONVERTER_VERSION (jars from Maven Central)"
    converter_install
    # Each plugin.path entry holds one plugin directory (lib/, its jars): one class loader per plugin.
    echo "JAVA=$(java17)"
    echo "CONNECT_LIB=$(connect_home)/lib"
    echo "PLUGIN_PATH=$(sink_home),$(converter_home)"
    echo "KAFKA_VERSION=$KAFKA_VERSION"
    echo "ICEBERG_VERSION=$ICEBERG_VERSION"
    echo "CONVERTER_VERSION=$PEER_CONVERTER_VERSION"
    ;;
  *) die "usage: bash scripts/lib/peer-java.sh install" ;;
esac
