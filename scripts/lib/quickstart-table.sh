# The quickstart's check of its Iceberg table, and the repair of one whose files are gone. Sourced, never
# run; needs lib/common.sh and the stack's endpoints.env in the environment.
#
# A table the catalog keeps while its files are gone from S3 (the store emptied under the catalog, e.g. an
# S3 server restarted without its saved state) fails every task that loads it, and the worker would wait
# forever. The table's rows are lost; the events are still in the topic. So the repair starts the table
# afresh from the topic:
#   1. delete the connector's consumer group (connect-<connector>): its offsets lie past the events whose
#      files are gone, and a group with no offsets starts at each partition's earliest offset. First,
#      because Kafka refuses while a worker of the connector runs: then nothing has been changed yet.
#   2. drop the table's catalog entry (no purge: the files are gone anyway); the worker auto-creates it.
# Nothing on the control topic needs resetting: a recreated table is planned from the connector's
# applied position, and every announcement of the re-read records lies above it (docs/sink.md, "a table
# is dropped and recreated"). `icefloe positions --adopt` is for a table that still loads (rolled back,
# or written by others first), not for one whose metadata is gone.

# qs_kafka_java MAIN ARGS...: one of Kafka's own tools (the stack's Kafka jars on its Java 17).
qs_kafka_java() {
  "$ICEFLOE_JAVA17" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Dlog4j2.configurationFile="$ICEFLOE_ROOT/infra/kafka/log4j2.properties" -Dicefloe.kafka.log=/dev/null \
    -cp "$ICEFLOE_KAFKA_HOME/lib/*" "$@"
}

# qs_topic_events TOPIC: how many records the topic holds (end minus start offsets, every partition).
qs_topic_events() {
  local earliest latest
  earliest=$(qs_kafka_java org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$ICEFLOE_KAFKA_BOOTSTRAP" --topic "$1" --time -2 2>/dev/null) || return 1
  latest=$(qs_kafka_java org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$ICEFLOE_KAFKA_BOOTSTRAP" --topic "$1" --time -1 2>/dev/null) || return 1
  { echo "$earliest" | awk -F: '{ s -= $3 } END { print s + 0 }'; echo "$latest" | awk -F: '{ s += $3 } END { print s + 0 }'; } | awk '{ s += $1 } END { print s }'
}

qs_json() { "$ICEFLOE_PYTHON" -c 'import json, sys; v = json.loads(sys.argv[1]).get(sys.argv[2], ""); print(v if isinstance(v, str) else json.dumps(v))' "$1" "$2"; }

# qs_delete_group GROUP: deletes the consumer group with Kafka's own tool; prints what happened
# (deleted | absent), or fails naming the cause (a running worker: the group has members).
qs_delete_group() {
  local group=$1 out
  out=$(qs_kafka_java org.apache.kafka.tools.consumer.group.ConsumerGroupCommand \
    --bootstrap-server "$ICEFLOE_KAFKA_BOOTSTRAP" --delete --group "$group" 2>&1) || true
  case "$out" in
    *"was successful"*) echo deleted ;;
    *GroupIdNotFoundException*|*"does not exist"*) echo absent ;;
    *GroupNotEmptyException*|*"is not empty"*)
      die "the consumer group $group has members: a worker of this connector is running (e.g. a kept-running icefloe standalone); stop it (Ctrl-C) and run the quickstart again. Nothing was changed." ;;
    *) die "deleting the consumer group $group failed: $out" ;;
  esac
}

# quickstart_table_check TABLE CONNECTOR TOPIC: says whether TABLE is whole; repairs it as above if its
# files are gone, printing exactly what it did. Sets QS_REREAD to the number of records already in TOPIC
# that the worker will read again (0 unless it repaired), so the caller waits for those too.
quickstart_table_check() {
  local table=$1 connector=$2 topic=$3 group="connect-$2" out state
  QS_REREAD=0
  out=$("$ICEFLOE_PYTHON" "$ICEFLOE_ROOT/scripts/lib/quickstart_table.py" check "$table") \
    || die "checking the Iceberg table $table failed (see above)"
  state=$(qs_json "$out" state)
  case "$state" in
    ok) log "$table: $(qs_json "$out" snapshots) snapshots, $(qs_json "$out" files) data files, all in S3"; return 0 ;;
    absent) log "$table does not exist yet: the worker creates it"; return 0 ;;
    broken) ;;
    *) die "checking the Iceberg table $table: unexpected answer $out" ;;
  esac
  log "$table is in the catalog but its files are gone from S3 ($(qs_json "$out" reason)): every task would fail to load it. Its rows are lost; the topic still holds the events. Starting $table afresh from the topic:"
  local group_result
  group_result=$(qs_delete_group "$group") || exit 1   # it died (in the subshell) naming the cause
  QS_REREAD=$(qs_topic_events "$topic") || die "reading the offsets of topic $topic failed"
  case "$group_result" in
    deleted) log "  deleted the consumer group $group (its offsets lay past the lost rows): the worker reads the $QS_REREAD records of topic $topic again, from its earliest offsets" ;;
    absent) log "  the consumer group $group does not exist: the worker reads the $QS_REREAD records of topic $topic from its earliest offsets" ;;
  esac
  "$ICEFLOE_PYTHON" "$ICEFLOE_ROOT/scripts/lib/quickstart_table.py" drop "$table" >/dev/null \
    || die "dropping the catalog entry of $table failed (see above)"
  log "  dropped the catalog entry of $table (without purge): the worker creates the table again"
  log "  left the control topic as it is: a recreated table starts from the connector's applied position (docs/sink.md)"
}
