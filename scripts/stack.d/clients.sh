# Real Kafka Connect REST clients from package registries, for the end-to-end client tests
# (test/clients/, test/e2e/rest-client.test.ts). Install-only: no process.
#
# sourcelab: org.sourcelab:kafka-connect-client from Maven Central, the Java client library AKHQ uses
# for its Connect pages (create, update config, pause, resume, stop, restart, delete, status). Its jars
# (the client plus Apache HttpClient, Jackson and SLF4J) are copied into
# $ICEFLOE_CACHE/connect-client-sourcelab-<version>/lib; the driver test/clients/sourcelab/Driver.java
# runs from source on Java 17 (the JDK's single-file launcher), so nothing compiled is cached.
#
# kafka-connect-py: the PyPI client (module kafka_connect, CLI `kc`) in its own venv
# $ICEFLOE_CACHE/connect-client-py-<hash of the pin and the interpreter>; driver
# test/clients/kafka-connect-py/driver.py.
#
# The Go client of the Terraform provider (ricardo-ch/go-kafka-connect) and the provider itself are
# refused by the Go module proxy here, and kcctl is published to no registry this machine reaches.
#
# A test that runs before `scripts/stack up` installed this calls test/clients/install, which runs the
# same function.

clients_sourcelab_dir() { echo "$ICEFLOE_CACHE/connect-client-sourcelab-$CONNECT_CLIENT_SOURCELAB_VERSION"; }

clients_py_venv() {
  local key
  key=$( { echo "kafka-connect-py==$CONNECT_CLIENT_PY_VERSION"; python3 -c 'import sys; print(sys.version)' 2>/dev/null; } | sha256sum | cut -c1-12)
  echo "$ICEFLOE_CACHE/connect-client-py-$key"
}

clients_what() { echo "installing real Connect REST clients (Maven Central org.sourcelab:kafka-connect-client $CONNECT_CLIENT_SOURCELAB_VERSION, PyPI kafka-connect-py $CONNECT_CLIENT_PY_VERSION)"; }
clients_installed() {
  is_done "$(clients_sourcelab_dir)" && is_done "$(clients_py_venv)" && "$(clients_py_venv)/bin/python" -c 'import kafka_connect' 2>/dev/null
}

clients_install() {
  maven_copy_deps "$(clients_sourcelab_dir)" \
    "$(maven_dep org.sourcelab kafka-connect-client "$CONNECT_CLIENT_SOURCELAB_VERSION")" \
    || die "copying org.sourcelab:kafka-connect-client $CONNECT_CLIENT_SOURCELAB_VERSION and its dependencies from Maven Central failed"
  local venv; venv=$(clients_py_venv)
  if is_done "$venv" && "$venv/bin/python" -c 'import kafka_connect' 2>/dev/null; then return 0; fi
  log "creating the Connect client venv $venv (kafka-connect-py $CONNECT_CLIENT_PY_VERSION)"
  rm -rf "$venv"
  python3 -m venv "$venv" >&2 || { rm -rf "$venv"; die "python3 -m venv failed (apt package python3-venv)"; }
  "$venv/bin/pip" install -q --no-input --progress-bar off "kafka-connect-py==$CONNECT_CLIENT_PY_VERSION" >&2 \
    || { rm -rf "$venv"; die "pip install kafka-connect-py==$CONNECT_CLIENT_PY_VERSION failed"; }
  mark_done "$venv"
}

clients_env() {
  echo "ICEFLOE_CONNECT_CLIENT_SOURCELAB_LIB=$(clients_sourcelab_dir)/lib"
  echo "ICEFLOE_CONNECT_CLIENT_PYTHON=$(clients_py_venv)/bin/python"
}
