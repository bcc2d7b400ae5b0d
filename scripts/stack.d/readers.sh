# The Python venv of the independent Iceberg readers (PyIceberg, DuckDB with its iceberg/httpfs/avro
# extensions) and of the S3 store (moto, see s3.sh). Install-only: no process. The venv directory is
# named after a hash of the pins and the interpreter, so a pin change builds a new one. The DuckDB
# extensions come from PyPI wheels and are installed into an extension directory inside the venv, so
# nothing reaches for extensions.duckdb.org at test time (readers set autoinstall_known_extensions=false).
#
# The third reader, Apache Spark (test/readers/read_spark.py), is the install-only entry `spark`: its own
# venv (pyspark only: it bundles Spark's jars, ~450 MB, and wants nothing of the readers venv) and
# Iceberg's Spark runtime plus the AWS bundle from Maven Central, both under
# $ICEFLOE_CACHE/spark-<pyspark>-iceberg-<iceberg>/. The jars are handed to Spark as spark.jars (never
# Ivy's spark.jars.packages), run on Java 17. Only tests use it: `scripts/stack up --no-spark` (the
# quickstart, which reads with DuckDB) skips it and records that in $ICEFLOE_RUN/no-spark, so the
# readers count as ready without it; a later `up` without the flag installs it.

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

readers_what() { echo "installing the Python readers venv (PyPI: moto, PyIceberg, DuckDB $DUCKDB_VERSION + extensions)"; }
readers_installed() { is_done "$(readers_venv)" && "$(readers_python)" -c 'import pyiceberg, duckdb, moto' 2>/dev/null; }
readers_install() { readers_install_venv; }

readers_install_venv() {
  local dir; dir=$(readers_venv)
  readers_installed && return 0
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

# Spark too, unless this stack was brought up without it (--no-spark).
readers_ready() {
  local dir; dir=$(readers_venv)
  is_done "$dir" && "$dir/bin/python" -c 'import pyiceberg, duckdb' 2>/dev/null && { spark_ready || spark_skipped; }
}

readers_describe() {
  local spark="Spark $PYSPARK_VERSION + Iceberg runtime in $(spark_home)"
  if ! spark_ready && spark_skipped; then spark="no Spark (up --no-spark; scripts/stack up installs it)"; fi
  echo "Python venv $(readers_venv) (PyIceberg $PYICEBERG_VERSION, DuckDB $DUCKDB_VERSION + iceberg/httpfs/avro, moto $MOTO_VERSION); $spark"
}

readers_env() {
  echo "ICEFLOE_PYTHON=$(readers_python)"
  echo "ICEFLOE_DUCKDB_EXTENSION_DIR=$(readers_extdir)"
  echo "ICEFLOE_SPARK_PYTHON=$(spark_python)"
  echo "ICEFLOE_SPARK_JARS=$(spark_jars)"
}

# --- Spark ------------------------------------------------------------------------------------------

spark_home() { echo "$ICEFLOE_CACHE/spark-$PYSPARK_VERSION-iceberg-$ICEBERG_VERSION"; }
spark_venv() {
  local key; key=$(python3 -c 'import sys; print(sys.version)' 2>/dev/null | sha256sum | cut -c1-12)
  echo "$(spark_home)/venv-$key"
}
spark_python() { echo "$(spark_venv)/bin/python"; }
spark_jardir() { echo "$(spark_home)/jars/lib"; }
# The jars as spark.jars wants them: a comma-separated list of paths.
spark_jars() { find "$(spark_jardir)" -maxdepth 1 -name '*.jar' 2>/dev/null | sort | paste -sd, -; }

# This stack was brought up with --no-spark (the quickstart): Spark is not required.
spark_skipped() { [ -f "$ICEFLOE_RUN/no-spark" ]; }
spark_what() { echo "installing the Spark reader (PyPI pyspark $PYSPARK_VERSION, Iceberg's Spark runtime from Maven Central)"; }
spark_installed() { spark_ready; }

spark_install() {
  local i=org.apache.iceberg venv; venv=$(spark_venv)
  # Both artifacts are shaded and declare no runtime dependencies: exactly two jars.
  maven_copy_deps "$(spark_home)/jars" \
    "$(maven_dep $i "iceberg-spark-runtime-${PYSPARK_VERSION%.*}_$SPARK_SCALA_VERSION" "$ICEBERG_VERSION")" \
    "$(maven_dep $i iceberg-aws-bundle "$ICEBERG_VERSION")" \
    || die "copying Iceberg's Spark runtime and AWS bundle $ICEBERG_VERSION from Maven Central failed"
  if is_done "$venv" && "$venv/bin/python" -c 'import pyspark' 2>/dev/null; then return 0; fi
  log "creating the Spark reader venv $venv (pyspark $PYSPARK_VERSION)"
  rm -rf "$venv"
  python3 -m venv "$venv" >&2 || { rm -rf "$venv"; die "python3 -m venv failed (apt package python3-venv)"; }
  "$venv/bin/pip" install -q --no-input --progress-bar off "pyspark==$PYSPARK_VERSION" >&2 \
    || { rm -rf "$venv"; die "pip install pyspark==$PYSPARK_VERSION failed"; }
  mark_done "$venv"
}

spark_ready() {
  is_done "$(spark_home)/jars" && is_done "$(spark_venv)" && "$(spark_python)" -c 'import pyspark' 2>/dev/null
}
