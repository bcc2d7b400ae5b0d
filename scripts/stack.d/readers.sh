# The Python venv of the independent Iceberg readers (PyIceberg, DuckDB with its iceberg/httpfs/avro
# extensions) and of the S3 store (moto, see s3.sh). Install-only: no process. The venv directory is
# named after a hash of the pins and the interpreter, so a pin change builds a new one. The DuckDB
# extensions come from PyPI wheels and are installed into an extension directory inside the venv, so
# nothing reaches for extensions.duckdb.org at test time (readers set autoinstall_known_extensions=false).

readers_pins() {
  printf '%s\n' \
    "moto[server]==$MOTO_VERSION" \
    "boto3==$BOTO3_VERSION" \
    "pyiceberg[pyarrow,pyiceberg-core,sql-postgres,sql-sqlite]==$PYICEBERG_VERSION" \
    "pyarrow==$PYARROW_VERSION" \
    "duckdb==$DUCKDB_VERSION" \
    "duckdb-extensions==$DUCKDB_VERSION" \
    "duckdb-extension-iceberg==$DUCKDB_VERSION" \
    "duckdb-extension-httpfs==$DUCKDB_VERSION" \
    "duckdb-extension-avro==$DUCKDB_VERSION"
}

readers_venv() {
  local key
  key=$( { readers_pins; python3 -c 'import sys; print(sys.version)' 2>/dev/null; } | sha256sum | cut -c1-12)
  echo "$ICEFLOE_CACHE/venv-$key"
}
readers_python() { echo "$(readers_venv)/bin/python"; }
readers_extdir() { echo "$(readers_venv)/duckdb-extensions"; }

# Loads the three extensions from the venv's extension directory with autoinstall off: the same
# settings test/readers/read_table.py uses.
readers_check_duckdb() {
  "$1/bin/python" - "$1/duckdb-extensions" <<'EOF'
import sys, duckdb
con = duckdb.connect(config={"extension_directory": sys.argv[1],
                             "autoinstall_known_extensions": False,
                             "autoload_known_extensions": False})
for ext in ("iceberg", "httpfs", "avro"):
    con.execute(f"LOAD {ext}")
loaded = {r[0] for r in con.execute(
    "SELECT extension_name FROM duckdb_extensions() WHERE loaded").fetchall()}
assert {"iceberg", "httpfs", "avro"} <= loaded, loaded
EOF
}

readers_install() {
  local dir; dir=$(readers_venv)
  if is_done "$dir" && "$dir/bin/python" -c 'import pyiceberg, duckdb, moto' 2>/dev/null; then return 0; fi
  command -v python3 >/dev/null || die "python3 not found (apt packages python3 python3-venv)"
  log "creating the readers venv $dir (moto, PyIceberg, DuckDB $DUCKDB_VERSION + extensions)"
  rm -rf "$dir"
  python3 -m venv "$dir" >&2 || { rm -rf "$dir"; die "python3 -m venv failed (apt package python3-venv)"; }
  local pins; mapfile -t pins < <(readers_pins)
  "$dir/bin/pip" install -q --no-input --progress-bar off "${pins[@]}" >&2 \
    || { rm -rf "$dir"; die "pip install of the readers venv failed"; }
  # Install each extension binary from its wheel into the venv's extension directory (no network).
  "$dir/bin/python" - "$dir/duckdb-extensions" <<'EOF' >&2 || { rm -rf "$dir"; die "installing the DuckDB extensions from their wheels failed"; }
import sys, duckdb
from duckdb_extensions import import_extension
con = duckdb.connect(config={"extension_directory": sys.argv[1], "autoinstall_known_extensions": False})
for ext in ("avro", "httpfs", "iceberg"):
    import_extension(ext, force_install=True, con=con)
EOF
  readers_check_duckdb "$dir" >&2 || { rm -rf "$dir"; die "DuckDB cannot LOAD iceberg/httpfs/avro from $dir/duckdb-extensions"; }
  mark_done "$dir"
}

readers_ready() {
  local dir; dir=$(readers_venv)
  is_done "$dir" && "$dir/bin/python" -c 'import pyiceberg, duckdb' 2>/dev/null
}

readers_describe() {
  echo "Python venv $(readers_venv) (PyIceberg $PYICEBERG_VERSION, DuckDB $DUCKDB_VERSION + iceberg/httpfs/avro, moto $MOTO_VERSION)"
}

readers_env() {
  echo "ICEFLOE_PYTHON=$(readers_python)"
  echo "ICEFLOE_DUCKDB_EXTENSION_DIR=$(readers_extdir)"
}
