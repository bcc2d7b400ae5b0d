# Our fault-injection proxy (test/fault-proxy/server.ts), run by Node: transparent in front of S3, the
# Iceberg REST catalog and the schema registry until a test arms a fault through its control API. Nothing to install (it is our
# own code, run by the Node that ensure_node puts on PATH); it keeps no data.
proxy_timeout=15

proxy_start() {
  start_bg proxy node "$ICEFLOE_ROOT/test/fault-proxy/server.ts" \
    --route "s3=127.0.0.1:$PROXY_S3_PORT=http://127.0.0.1:$S3_PORT" \
    --route "catalog=127.0.0.1:$PROXY_CATALOG_PORT=http://127.0.0.1:$CATALOG_PORT" \
    --route "registry=127.0.0.1:$PROXY_REGISTRY_PORT=http://127.0.0.1:$REGISTRY_PORT" \
    --control "127.0.0.1:$PROXY_CONTROL_PORT"
}

# Ready once our control API answers as the fault proxy (not merely something on the port).
proxy_ready() { curl -fsS --max-time 2 "http://127.0.0.1:$PROXY_CONTROL_PORT/health" 2>/dev/null | grep -q '"service":"fault-proxy"'; }

proxy_describe() {
  echo "fault-injection proxy: S3 on 127.0.0.1:$PROXY_S3_PORT → $S3_PORT, catalog on $PROXY_CATALOG_PORT → $CATALOG_PORT, registry on $PROXY_REGISTRY_PORT → $REGISTRY_PORT, control on $PROXY_CONTROL_PORT"
}

proxy_env() {
  echo "ICEFLOE_PROXY_S3_ENDPOINT=http://127.0.0.1:$PROXY_S3_PORT"
  echo "ICEFLOE_PROXY_CATALOG_URI=http://127.0.0.1:$PROXY_CATALOG_PORT"
  echo "ICEFLOE_PROXY_REGISTRY_URL=http://127.0.0.1:$PROXY_REGISTRY_PORT/apis/ccompat/v7"
  echo "ICEFLOE_PROXY_CONTROL_URL=http://127.0.0.1:$PROXY_CONTROL_PORT"
}
