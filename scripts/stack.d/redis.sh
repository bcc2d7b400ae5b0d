# Redis from Debian's packages: in-memory only (no RDB, no AOF), loopback, its own run dir.
redis_timeout=15

redis_start() {
  mkdir -p "$ICEFLOE_RUN/data/redis"
  start_bg redis redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no \
    --dir "$ICEFLOE_RUN/data/redis" --daemonize no
}

redis_ready() { [ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ]; }

redis_describe() { echo "Redis $(redis-server --version 2>/dev/null | sed -n 's/.*v=\([^ ]*\).*/\1/p') on 127.0.0.1:$REDIS_PORT"; }

redis_env() { echo "ICEFLOE_REDIS_URL=redis://127.0.0.1:$REDIS_PORT"; }
