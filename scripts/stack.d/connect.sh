# The reference Apache Kafka Connect worker (connect-runtime $KAFKA_VERSION from Maven Central, the same
# Kafka version as the broker), in distributed mode (ConnectDistributed) against the stack's Kafka, with
# the file connectors (connect-file) on its classpath, REST on 127.0.0.1:$CONNECT_PORT. Only the REST
# conformance suite talks to it: it answers what a real Connect worker answers. Java 17, small heap.
# `scripts/stack up --no-connect` (the quickstart) leaves it out and records that in $ICEFLOE_RUN/no-connect,
# so `status` says it was skipped instead of down; a later `up` without the flag (scripts/test) starts it.
# Logs: logs/connect.log (console, WARN and up), logs/connect.server.log (INFO; .prev = last run).
connect_timeout=150

connect_home() { echo "$ICEFLOE_CACHE/connect-$KAFKA_VERSION"; }
connect_url() { echo "http://127.0.0.1:$CONNECT_PORT"; }

connect_what() { echo "installing Apache Kafka Connect $KAFKA_VERSION (jars from Maven Central, run on Java 17)"; }
connect_installed() { is_done "$(connect_home)"; }

connect_install() {
  [ -x "$(java17)" ] || die "Java 17 not found at $(java17) (apt package openjdk-17-jre-headless)"
  # As for the broker (kafka.sh): the POMs leave the logging back end out (log4j2 + its slf4j2 binding
  # here) and pin slf4j-api 1.7.36, which cannot see that binding (silent NOP logging): slf4j-api 2.
  local k=org.apache.kafka
  maven_copy_deps "$(connect_home)" \
    "$(maven_dep org.slf4j slf4j-api "$SLF4J_VERSION")" \
    "$(maven_dep $k connect-runtime "$KAFKA_VERSION")" \
    "$(maven_dep $k connect-json "$KAFKA_VERSION")" \
    "$(maven_dep $k connect-file "$KAFKA_VERSION")" \
    "$(maven_dep org.apache.logging.log4j log4j-core "$LOG4J_VERSION")" \
    "$(maven_dep org.apache.logging.log4j log4j-slf4j2-impl "$LOG4J_VERSION")"
}

connect_start() {
  [ -d "$(connect_home)/lib" ] || die "Kafka Connect is not installed ($(connect_home)); run scripts/stack install"
  port_open "$CONNECT_PORT" && die "port $CONNECT_PORT is in use (another Connect worker?)"
  local dir="$ICEFLOE_RUN/data/connect" slog="$ICEFLOE_RUN/logs/connect.server.log"
  mkdir -p "$dir"
  {
    cat "$ICEFLOE_ROOT/infra/connect/connect-distributed.properties"
    echo
    echo "# --- written by scripts/stack.d/connect.sh ---"
    echo "bootstrap.servers=$(kafka_bootstrap)"
    echo "listeners=http://127.0.0.1:$CONNECT_PORT"
    echo "rest.advertised.host.name=127.0.0.1"
    echo "rest.advertised.port=$CONNECT_PORT"
  } > "$dir/connect-distributed.properties"
  [ -f "$slog" ] && mv "$slog" "$slog.prev"
  start_bg connect "$(java17)" -Xms64m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$ICEFLOE_ROOT/infra/kafka/log4j2.properties" \
    -Dicefloe.kafka.log="$slog" -Dkafka.logs.dir="$ICEFLOE_RUN/logs" \
    -cp "$(connect_home)/lib/*" org.apache.kafka.connect.cli.ConnectDistributed "$dir/connect-distributed.properties"
}

# /health (KIP-1017) answers 503 until the worker has joined its group and read its config topic, then 200.
connect_ready() {
  pid_of connect >/dev/null || return 1
  curl -sf -o /dev/null --max-time 5 "$(connect_url)/health"
}

connect_describe() {
  echo "Apache Kafka Connect $KAFKA_VERSION (distributed, group icefloe-connect-reference, file connectors) on $(connect_url)"
}

connect_env() { echo "ICEFLOE_CONNECT_URL=$(connect_url)"; }
