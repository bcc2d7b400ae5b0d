# Apache Kafka in KRaft mode from Maven Central jars, run on Java 17. One combined broker+controller
# by default; N of them (static quorum, RF 3 / min ISR 2) when $ICEFLOE_RUN/kafka-brokers holds N
# (`scripts/stack up --brokers 3`). Node n listens on KAFKA_PORT+2(n-1) (clients) and
# KAFKA_CONTROLLER_PORT+2(n-1) (controller), keeps its data under data/kafka-<n>, its PID as kafka-<n>.
# Logs: logs/kafka-<n>.log (console, WARN and up), logs/kafka-<n>.server.log (INFO; .prev = last run).
kafka_timeout=90

kafka_home() { echo "$ICEFLOE_CACHE/kafka-$KAFKA_VERSION"; }

kafka_what() { echo "installing Apache Kafka $KAFKA_VERSION (jars from Maven Central, run on Java 17)"; }
kafka_installed() { is_done "$(kafka_home)"; }

kafka_install() {
  [ -x "$(java17)" ] || die "Java 17 not found at $(java17) (apt package openjdk-17-jre-headless)"
  # The Maven POMs leave the logging back end out (Kafka's tarball adds it), hence log4j here; they
  # pin slf4j-api 1.7.36, which cannot see the slf4j2 binding (silent NOP logging), hence slf4j-api 2.
  maven_copy_deps "$(kafka_home)" \
    "$(maven_dep org.slf4j slf4j-api "$SLF4J_VERSION")" \
    "$(maven_dep org.apache.kafka kafka_2.13 "$KAFKA_VERSION")" \
    "$(maven_dep org.apache.kafka kafka-tools "$KAFKA_VERSION")" \
    "$(maven_dep org.apache.logging.log4j log4j-core "$LOG4J_VERSION")" \
    "$(maven_dep org.apache.logging.log4j log4j-slf4j2-impl "$LOG4J_VERSION")"
}

kafka_nodes() {
  local n=1
  [ -f "$ICEFLOE_RUN/kafka-brokers" ] && n=$(tr -dc 0-9 < "$ICEFLOE_RUN/kafka-brokers")
  echo "${n:-1}"
}
kafka_port()      { echo $(( KAFKA_PORT + 2 * ($1 - 1) )); }
kafka_ctl_port()  { echo $(( KAFKA_CONTROLLER_PORT + 2 * ($1 - 1) )); }
kafka_bootstrap() {
  local n out=()
  for n in $(seq 1 "$(kafka_nodes)"); do out+=("127.0.0.1:$(kafka_port "$n")"); done
  (IFS=,; echo "${out[*]}")
}

# kafka_java MAIN ARGS...: a JVM on Kafka's classpath (also handy for tests' tool calls).
kafka_java() {
  "$(java17)" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$ICEFLOE_ROOT/infra/kafka/log4j2.properties" \
    -Dicefloe.kafka.log=/dev/null -cp "$(kafka_home)/lib/*" "$@"
}

kafka_write_config() {
  local n=$1 nodes=$2 dir="$ICEFLOE_RUN/data/kafka-$1" voters=() i
  for i in $(seq 1 "$nodes"); do voters+=("$i@127.0.0.1:$(kafka_ctl_port "$i")"); done
  mkdir -p "$dir"
  {
    cat "$ICEFLOE_ROOT/infra/kafka/server.properties"
    echo
    echo "# --- node $n of $nodes (written by scripts/stack.d/kafka.sh) ---"
    echo "node.id=$n"
    # Static voters: every node formatted alike, no --standalone / dynamic quorum.
    echo "controller.quorum.voters=$(IFS=,; echo "${voters[*]}")"
    echo "listeners=PLAINTEXT://127.0.0.1:$(kafka_port "$n"),CONTROLLER://127.0.0.1:$(kafka_ctl_port "$n")"
    echo "advertised.listeners=PLAINTEXT://127.0.0.1:$(kafka_port "$n")"
    echo "log.dirs=$dir/log"
    if [ "$nodes" -ge 3 ]; then
      local rf=3 isr=2
    else
      local rf=$nodes isr=1
    fi
    echo "default.replication.factor=$rf"
    echo "min.insync.replicas=$isr"
    echo "offsets.topic.replication.factor=$rf"
    echo "transaction.state.log.replication.factor=$rf"
    echo "transaction.state.log.min.isr=$isr"
    echo "share.coordinator.state.topic.replication.factor=$rf"
    echo "share.coordinator.state.topic.min.isr=$isr"
  } > "$dir/server.properties"
}

kafka_start() {
  local nodes n; nodes=$(kafka_nodes)
  case "$nodes" in [1-3]) ;; *) die "kafka-brokers must be 1..3 (got '$nodes')" ;; esac
  local cid_file="$ICEFLOE_RUN/data/kafka-cluster-id"
  if [ ! -s "$cid_file" ]; then
    kafka_java kafka.tools.StorageTool random-uuid > "$cid_file.tmp" && mv "$cid_file.tmp" "$cid_file" \
      || die "kafka StorageTool random-uuid failed"
  fi
  local cid todo=() pids=() rc=0; cid=$(tr -d '[:space:]' < "$cid_file")
  # Only the nodes not running: `stack start kafka` after a node was killed restarts just that one.
  for n in $(seq 1 "$nodes"); do
    pid_of "kafka-$n" >/dev/null && continue
    # A taken port would only show as a timeout: wait_ready watches kafka.pid, not kafka-<n>.pid.
    port_open "$(kafka_port "$n")" && die "port $(kafka_port "$n") is in use (another Kafka?)"
    port_open "$(kafka_ctl_port "$n")" && die "port $(kafka_ctl_port "$n") is in use (another Kafka?)"
    kafka_write_config "$n" "$nodes"
    todo+=("$n")
  done
  # Format new data dirs in parallel (each is a JVM start); a restarted node keeps its data.
  for n in "${todo[@]}"; do
    local dir="$ICEFLOE_RUN/data/kafka-$n"
    [ -f "$dir/log/meta.properties" ] && continue
    kafka_java kafka.tools.StorageTool format -t "$cid" -c "$dir/server.properties" \
      > "$ICEFLOE_RUN/logs/kafka-$n.format.log" 2>&1 &
    pids+=($!)
  done
  for n in "${pids[@]}"; do wait "$n" || rc=1; done
  [ "$rc" = 0 ] || { cat "$ICEFLOE_RUN"/logs/kafka-*.format.log >&2; die "formatting Kafka storage failed"; }
  for n in "${todo[@]}"; do
    local slog="$ICEFLOE_RUN/logs/kafka-$n.server.log"
    [ -f "$slog" ] && mv "$slog" "$slog.prev"   # readiness greps this file: no stale "started" line
    start_bg "kafka-$n" "$(java17)" -Xms128m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
      -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
      -Dlog4j2.configurationFile="$ICEFLOE_ROOT/infra/kafka/log4j2.properties" \
      -Dicefloe.kafka.log="$slog" -Dkafka.logs.dir="$ICEFLOE_RUN/logs" \
      -cp "$(kafka_home)/lib/*" kafka.Kafka "$ICEFLOE_RUN/data/kafka-$n/server.properties"
  done
  # The stack prints logs/kafka.log when start-up fails: point it at node 1's console log.
  ln -sfn "kafka-1.log" "$ICEFLOE_RUN/logs/kafka.log"
}

# Cheap on purpose (called once a second): no JVM. "Kafka Server started" is logged after the broker
# has caught up with the metadata log and been unfenced by the controller quorum.
kafka_ready() {
  local n
  for n in $(seq 1 "$(kafka_nodes)"); do
    pid_of "kafka-$n" >/dev/null || return 1
    port_open "$(kafka_port "$n")" || return 1
    grep -q 'Kafka Server started' "$ICEFLOE_RUN/logs/kafka-$n.server.log" 2>/dev/null || return 1
  done
}

kafka_stop() {
  local f name p
  # TERM every node first: stopped one by one, the last nodes would wait on a lost quorum.
  for f in "$ICEFLOE_RUN"/pids/kafka-*.pid; do
    [ -e "$f" ] || continue
    p=$(pid_of "$(basename "$f" .pid)") && { kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true; }
  done
  for f in "$ICEFLOE_RUN"/pids/kafka-*.pid; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .pid); stop_pid "$name"
  done
}

kafka_describe() {
  local n; n=$(kafka_nodes)
  echo "Apache Kafka $KAFKA_VERSION (KRaft, $n node$([ "$n" = 1 ] || echo s)) on $(kafka_bootstrap)"
}

kafka_env() {
  echo "ICEFLOE_KAFKA_BOOTSTRAP=$(kafka_bootstrap)"
  echo "ICEFLOE_KAFKA_BROKERS=$(kafka_nodes)"
  echo "ICEFLOE_KAFKA_HOME=$(kafka_home)"
  echo "ICEFLOE_JAVA17=$(java17)"
}
