#!/usr/bin/env python3
"""The independent Iceberg reader of our tests: PyIceberg and DuckDB, run with $ICEFLOE_PYTHON.

Usage: read_table.py '<json>'   or   echo '<json>' | read_table.py
Arguments (JSON object; every key is optional except "table", defaults come from the ICEFLOE_* env):
  mode        "read" (default) | "create": create the namespace and table through the REST catalog with
              PyIceberg and append `rows` (default: three sample rows) with pyarrow (an existing table
              is appended to) | "append": append `rows` with PyIceberg to an existing table (a foreign
              writer's snapshot: no Icefloe summary keys), either catalog kind | "footer": the Parquet
              field ids of every data file of the current snapshot, read from the footers by pyarrow |
              "history": every data file each snapshot added (manifests read once each, deleted entries
              included) and the current snapshot's live files, to prove no file was committed twice
  engine      "pyiceberg" (default) | "duckdb"
  catalog     {"kind": "rest"|"sql", "uri": ..., "name": ..., "warehouse": ...}
              rest: uri http://127.0.0.1:8181 ($ICEFLOE_CATALOG_URI)
              sql:  the JdbcCatalog tables behind the REST fixture, read directly with PyIceberg's
                    SqlCatalog; uri postgresql+psycopg2://... (default from $ICEFLOE_POSTGRES_URL),
                    or sqlite:////abs/path/catalog.db (a worker's embedded SQLite catalog; then give
                    "name" — the embedded default's is "iceberg" — and its file:// warehouse)
  s3          {"endpoint", "access_key", "secret_key", "region"} ($ICEFLOE_S3_*)
  table       "namespace.table"
  filter      PyIceberg: a row-filter expression ("id > 2 and name = 'b'");
              DuckDB: a SQL WHERE clause (the same text for simple comparisons)
  order_by    list of column names to sort the rows by
  columns     mode "read": only these top-level columns (big tables: read the coordinates, not every value)
  snapshot_id read this snapshot instead of the current one
  metadata_location   DuckDB only: iceberg_scan() this metadata.json instead of ATTACHing the catalog
  rows        mode "create": a list of row objects (the table schema is inferred by pyarrow);
              mode "append": row objects cast to the table's schema (missing columns are null)
  replace     mode "create": drop the table first if it exists
  files       mode "read": also say which data files the (filtered) scan used, as evidence of pruning:
              pyiceberg adds "scanned_files" (the paths scan.plan_files() planned) and "live_files"
              (every live data file of the scanned snapshot, from its manifests: file_path, spec_id,
              partition as the raw transform results in spec order, record_count, and lower_bounds /
              upper_bounds as {field id: hex of the Appendix D bytes});
              duckdb also runs EXPLAIN ANALYZE of the query and sets "files_scanned" to its scan's
              "Total Files Read" and "scanned_files" to its "Filename(s)"
Output (stdout, one JSON object):
  read:   {"engine", "table", "rows": [...], "files_scanned": n, "snapshots": [...], ...}
          pyiceberg adds current_snapshot_id, metadata_location, format_version, schema, partition_spec,
          properties; duckdb gives files_scanned null (it does not say) and data_files (live data
          files of the current snapshot) instead, unless "files" asks for its EXPLAIN ANALYZE evidence
  create, append: {"table", "metadata_location", "snapshot_id", "rows_appended"}; append adds "summary"
          (the new snapshot's summary)
  footer: {"table", "snapshot_id", "schema_field_ids": {path: id}, "files": [{"file_path", "record_count",
          "field_ids": {path: id}, "columns": {parquet path: {"physical_type", "logical_type", "length"}}}]};
          field_ids paths are Iceberg column names (`a.b`, `tags.element`, `m.key`, `m.value.x`),
          schema_field_ids from PyIceberg's view of the current schema, field_ids from each file's footer
          (pyarrow.parquet, the PARQUET:field_id of every node, groups included); columns are the leaf
          columns by their Parquet path (`st.inner.depth`, `lst.list.element.k`), logical_type as pyarrow's
          JSON of it ({"Type": "Decimal", "precision": 1, "scale": 0}; {"Type": "None"} without one)
  Values: timestamps and dates as ISO 8601 strings, decimals as strings, binary as base64, NaN and
  infinities as strings; 64-bit integers stay JSON numbers (parse with lossless-json in Node).
Errors: a message naming the service on stderr and {"error": ..., "service": "catalog"|"s3"|"postgres"|null}
  on stdout (service as named in scripts/stack);
  exit 2 when the catalog, S3 or PostgreSQL is not reachable, 3 when the table does not exist, 1 otherwise.
"""
import base64
import datetime
import decimal
import json
import math
import os
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid


class Failure(Exception):
    def __init__(self, message, service=None, code=1):
        super().__init__(message)
        self.service, self.code = service, code


# The human name of each service, by its name in scripts/stack (what the "service" field carries).
SERVICES = {"catalog": "Iceberg REST catalog", "s3": "S3", "postgres": "PostgreSQL (SQL catalog)"}


def fail_unreachable(service, where, err):
    raise Failure(f"{SERVICES[service]} at {where} is not reachable ({err})", service, 2)


def check_catalog(uri):
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
        with opener.open(uri.rstrip("/") + "/v1/config", timeout=5) as r:
            r.read()
    except urllib.error.HTTPError:
        return  # it answers: reachable
    except (urllib.error.URLError, OSError) as e:
        fail_unreachable("catalog", uri, getattr(e, "reason", e))


def check_tcp(service, url, default_port):
    u = urllib.parse.urlparse(url if "://" in url else "tcp://" + url)
    try:
        socket.create_connection((u.hostname or "127.0.0.1", u.port or default_port), timeout=5).close()
    except OSError as e:
        fail_unreachable(service, url, e)


def jsonable(v):
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return str(v).replace("inf", "Infinity").replace("nan", "NaN")
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode()
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, datetime.timedelta):
        return v.total_seconds()
    return v


def settings(args):
    env = os.environ.get
    cat = dict(args.get("catalog") or {})
    cat.setdefault("kind", "rest")
    cat.setdefault("name", env("ICEFLOE_CATALOG_NAME", "icefloe"))
    cat.setdefault("warehouse", env("ICEFLOE_CATALOG_WAREHOUSE", "s3://warehouse/"))
    if cat["kind"] == "rest":
        cat.setdefault("uri", env("ICEFLOE_CATALOG_URI", "http://127.0.0.1:8181"))
    elif cat["kind"] == "sql":
        pg = env("ICEFLOE_POSTGRES_URL", "postgresql://iceberg:iceberg@127.0.0.1:5432/iceberg")
        cat.setdefault("uri", pg.replace("postgresql://", "postgresql+psycopg2://", 1))
    else:
        raise Failure(f"unknown catalog kind {cat['kind']!r} (rest or sql)")
    s3 = dict(args.get("s3") or {})
    s3.setdefault("endpoint", env("ICEFLOE_S3_ENDPOINT", "http://127.0.0.1:9000"))
    s3.setdefault("access_key", env("ICEFLOE_S3_ACCESS_KEY", "icefloe"))
    s3.setdefault("secret_key", env("ICEFLOE_S3_SECRET_KEY", "icefloe-secret"))
    s3.setdefault("region", env("ICEFLOE_S3_REGION", "us-east-1"))
    return cat, s3


def split_table(name):
    if not name or "." not in name:
        raise Failure(f"table must be 'namespace.table', got {name!r}")
    ns, _, tbl = name.rpartition(".")
    return ns, tbl


# --- PyIceberg ----------------------------------------------------------------------------------------

def load_pyiceberg_catalog(cat, s3):
    from pyiceberg.catalog import load_catalog

    props = {
        "s3.endpoint": s3["endpoint"], "s3.access-key-id": s3["access_key"],
        "s3.secret-access-key": s3["secret_key"], "s3.region": s3["region"],
        "s3.force-virtual-addressing": "false", "warehouse": cat["warehouse"], "uri": cat["uri"],
    }
    if cat["kind"] == "rest":
        check_catalog(cat["uri"])
        return load_catalog(cat["name"], type="rest", **props)
    if not cat["uri"].startswith("sqlite:"):  # a SQLite file needs no server
        check_tcp("postgres", cat["uri"].split("@")[-1], 5432)
    # Read-only: never create or migrate the catalog tables the REST fixture owns.
    return load_catalog(cat["name"], type="sql", init_catalog_tables="false", **props)


def load_pyiceberg_table(catalog, name):
    from pyiceberg.exceptions import NoSuchTableError

    try:
        return catalog.load_table(name)
    except NoSuchTableError as e:
        raise Failure(f"table {name} does not exist ({e})", "catalog", 3)


def table_info(table):
    md = table.metadata
    snaps = [{
        "snapshot_id": s.snapshot_id, "parent_snapshot_id": s.parent_snapshot_id,
        "sequence_number": s.sequence_number, "timestamp_ms": s.timestamp_ms,
        "operation": s.summary.operation.value if s.summary else None,
        "summary": dict(s.summary.additional_properties) if s.summary else {},
        "manifest_list": s.manifest_list,
    } for s in md.snapshots]
    return {
        "current_snapshot_id": md.current_snapshot_id,
        "metadata_location": table.metadata_location,
        "format_version": md.format_version,
        "snapshots": snaps,
        "schema": [{"id": f.field_id, "name": f.name, "type": str(f.field_type), "required": f.required}
                   for f in table.schema().fields],
        "partition_spec": [{"source_id": f.source_id, "name": f.name, "transform": str(f.transform)}
                           for f in table.spec().fields],
        "properties": dict(md.properties),
    }


def read_pyiceberg(args, cat, s3):
    check_tcp("s3", s3["endpoint"], 80)  # first: the REST catalog reads table metadata from S3 too
    table = load_pyiceberg_table(load_pyiceberg_catalog(cat, s3), args["table"])
    kw = {}
    if args.get("filter"):
        kw["row_filter"] = args["filter"]
    if args.get("snapshot_id") is not None:
        kw["snapshot_id"] = int(args["snapshot_id"])
    if args.get("columns"):
        kw["selected_fields"] = tuple(args["columns"])
    info = table_info(table)
    if info["current_snapshot_id"] is None and "snapshot_id" not in kw:
        return {"engine": "pyiceberg", "table": args["table"], "rows": [], "files_scanned": 0, **info}
    scan = table.scan(**kw)
    files = list(scan.plan_files())
    arrow = scan.to_arrow()
    if args.get("order_by"):
        arrow = arrow.sort_by([(c, "ascending") for c in args["order_by"]])
    out = {"engine": "pyiceberg", "table": args["table"], "rows": arrow.to_pylist(),
           "files_scanned": len(files), **info}
    if args.get("files"):
        out["scanned_files"] = sorted(task.file.file_path for task in files)
        snapshot = scan.snapshot()
        out["live_files"] = live_files(table, snapshot) if snapshot is not None else []
    return out


def data_file_info(df):
    bounds = lambda m: {str(k): bytes(v).hex() for k, v in sorted((m or {}).items())}  # noqa: E731
    return {
        "file_path": df.file_path, "spec_id": df.spec_id,
        # The raw transform results (day ordinals, bucket numbers, ...), not PyIceberg's display values.
        "partition": [df.partition[i] for i in range(len(df.partition))],
        "record_count": df.record_count,
        "lower_bounds": bounds(df.lower_bounds), "upper_bounds": bounds(df.upper_bounds),
    }


def live_files(table, snapshot):
    from pyiceberg.manifest import ManifestContent

    out = []
    for manifest in snapshot.manifests(table.io):
        if manifest.content != ManifestContent.DATA:
            continue
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            out.append(data_file_info(entry.data_file))
    return sorted(out, key=lambda f: f["file_path"])


def create_sample(args, cat, s3):
    import pyarrow as pa
    from pyiceberg.exceptions import NoSuchTableError

    if cat["kind"] != "rest":
        raise Failure("mode create goes through the REST catalog (catalog.kind rest)")
    check_tcp("s3", s3["endpoint"], 80)
    catalog = load_pyiceberg_catalog(cat, s3)
    ns, _ = split_table(args["table"])
    catalog.create_namespace_if_not_exists(ns)
    if args.get("replace"):
        try:
            catalog.drop_table(args["table"])
        except NoSuchTableError:
            pass
    rows = args.get("rows") or [
        {"id": 1, "name": "alpha", "ts": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)},
        {"id": 2, "name": "beta", "ts": datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc)},
        {"id": 3, "name": "gamma", "ts": datetime.datetime(2026, 1, 3, tzinfo=datetime.timezone.utc)},
    ]
    data = pa.Table.from_pylist(rows)
    table = catalog.create_table_if_not_exists(args["table"], schema=data.schema)
    return append_rows(catalog, table, args["table"], data)


def append_rows(catalog, table, name, data):
    import pyarrow as pa

    # Into an existing table: cast each column to its type (JSON gives ISO strings for timestamps,
    # and nulls for a missing or null column).
    target = table.schema().as_arrow()
    cols = [data.column(f.name).cast(f.type) if f.name in data.column_names else pa.nulls(data.num_rows, f.type)
            for f in target]
    table.append(pa.Table.from_arrays(cols, schema=target))
    table = catalog.load_table(name)
    snap = table.current_snapshot()
    return {"table": name, "metadata_location": table.metadata_location,
            "snapshot_id": table.metadata.current_snapshot_id, "rows_appended": data.num_rows,
            "summary": dict(snap.summary.additional_properties) if snap and snap.summary else {}}


def append_existing(args, cat, s3):
    import pyarrow as pa

    check_tcp("s3", s3["endpoint"], 80)
    catalog = load_pyiceberg_catalog(cat, s3)
    table = load_pyiceberg_table(catalog, args["table"])
    if not args.get("rows"):
        raise Failure("mode append needs rows")
    return append_rows(catalog, table, args["table"], pa.Table.from_pylist(args["rows"]))


def arrow_field_ids(fields, prefix=""):
    """{iceberg path: PARQUET:field_id} for an Arrow schema read from a Parquet footer (None when absent)."""
    import pyarrow as pa

    out = {}

    def fid(f):
        md = f.metadata or {}
        v = md.get(b"PARQUET:field_id")
        return int(v) if v is not None else None

    def walk(f, path):
        out[path] = fid(f)
        t = f.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i), f"{path}.{t.field(i).name}")
        elif pa.types.is_map(t):
            walk(t.key_field, f"{path}.key")
            walk(t.item_field, f"{path}.value")
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(t.value_field, f"{path}.element")

    for f in fields:
        walk(f, f"{prefix}{f.name}")
    return out


def schema_field_ids(schema):
    """{iceberg path: id} from PyIceberg's schema (list element, map key/value as pseudo fields)."""
    from pyiceberg.types import ListType, MapType, StructType

    out = {}

    def walk(t, path):
        if isinstance(t, StructType):
            for f in t.fields:
                p = f"{path}.{f.name}" if path else f.name
                out[p] = f.field_id
                walk(f.field_type, p)
        elif isinstance(t, ListType):
            out[f"{path}.element"] = t.element_id
            walk(t.element_type, f"{path}.element")
        elif isinstance(t, MapType):
            out[f"{path}.key"] = t.key_id
            walk(t.key_type, f"{path}.key")
            out[f"{path}.value"] = t.value_id
            walk(t.value_type, f"{path}.value")

    walk(schema.as_struct(), "")
    return out


def read_footers(args, cat, s3):
    import pyarrow.parquet as pq

    check_tcp("s3", s3["endpoint"], 80)
    table = load_pyiceberg_table(load_pyiceberg_catalog(cat, s3), args["table"])
    files = []
    if table.metadata.current_snapshot_id is not None:
        for task in table.scan().plan_files():
            path = task.file.file_path
            with table.io.new_input(path).open() as f:
                pf = pq.ParquetFile(f)
                ids = arrow_field_ids(pf.schema_arrow)
                rows = pf.metadata.num_rows
                columns = {c.path: {"physical_type": c.physical_type, "logical_type": json.loads(c.logical_type.to_json()),
                                    "length": c.length}
                           for c in (pf.schema.column(i) for i in range(len(pf.schema)))}
            files.append({"file_path": path, "record_count": rows, "field_ids": ids, "columns": columns})
    files.sort(key=lambda x: x["file_path"])
    return {"table": args["table"], "snapshot_id": table.metadata.current_snapshot_id,
            "schema_field_ids": schema_field_ids(table.schema()), "files": files}


# --- DuckDB -------------------------------------------------------------------------------------------

def sql_str(s):
    return "'" + str(s).replace("'", "''") + "'"


def sql_ident(s):
    return '"' + str(s).replace('"', '""') + '"'


def duckdb_connect(s3):
    import duckdb

    ext_dir = os.environ.get("ICEFLOE_DUCKDB_EXTENSION_DIR") or os.path.join(sys.prefix, "duckdb-extensions")
    # Extensions come from the venv's directory only (scripts/stack.d/readers.sh installs them).
    con = duckdb.connect(config={"extension_directory": ext_dir, "autoinstall_known_extensions": False,
                                 "autoload_known_extensions": False})
    for ext in ("httpfs", "avro", "iceberg"):
        con.execute(f"LOAD {ext}")
    u = urllib.parse.urlparse(s3["endpoint"])
    con.execute(
        "CREATE SECRET icefloe_s3 (TYPE s3, PROVIDER config, KEY_ID {}, SECRET {}, REGION {}, ENDPOINT {}, "
        "URL_STYLE 'path', USE_SSL {})".format(sql_str(s3["access_key"]), sql_str(s3["secret_key"]),
                                                sql_str(s3["region"]), sql_str(u.netloc),
                                                "true" if u.scheme == "https" else "false"))
    return con


def read_duckdb(args, cat, s3):
    con = duckdb_connect(s3)
    check_tcp("s3", s3["endpoint"], 80)
    info = {}
    if args.get("metadata_location"):
        source = f"iceberg_scan({sql_str(args['metadata_location'])})"
        meta_arg = sql_str(args["metadata_location"])
    else:
        if cat["kind"] != "rest":
            raise Failure("DuckDB reads through the REST catalog (catalog.kind rest) or a metadata_location")
        check_catalog(cat["uri"])
        ns, tbl = split_table(args["table"])
        con.execute(f"ATTACH {sql_str(cat['warehouse'])} AS lake (TYPE iceberg, ENDPOINT {sql_str(cat['uri'])}, "
                    "AUTHORIZATION_TYPE 'none', ACCESS_DELEGATION_MODE 'none')")
        source = f"lake.{sql_ident(ns)}.{sql_ident(tbl)}"
        exists = con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = 'lake' "
                             "AND schema_name = ? AND table_name = ?", [ns, tbl]).fetchone()[0]
        if not exists:
            raise Failure(f"table {args['table']} does not exist (DuckDB ATTACH of {cat['uri']})", "catalog", 3)
        meta_arg = sql_str(f"lake.{ns}.{tbl}")
    # Through Arrow, as PyIceberg's rows are (and without pytz, which DuckDB's own conversion wants).
    info["snapshots"] = con.execute(f"SELECT * FROM iceberg_snapshots({meta_arg})").to_arrow_table().to_pylist()
    info["snapshots"].sort(key=lambda s: s["sequence_number"])
    for snap in info["snapshots"]:  # a naive UTC TIMESTAMP in DuckDB; epoch ms as in PyIceberg's output
        ts = snap.get("timestamp_ms")
        if isinstance(ts, datetime.datetime):
            snap["timestamp_ms"] = int(ts.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)
    # DuckDB does not report the files a filtered scan read: give the live data files of the current snapshot.
    info["files_scanned"] = None
    info["data_files"] = con.execute(
        f"SELECT count(DISTINCT file_path) FROM iceberg_metadata({meta_arg}) "
        "WHERE manifest_content = 'DATA' AND status <> 'DELETED'").fetchone()[0]
    if args.get("snapshot_id") is not None:
        source += f" AT (VERSION => {int(args['snapshot_id'])})"
    cols = ", ".join(sql_ident(c) for c in args["columns"]) if args.get("columns") else "*"
    q = f"SELECT {cols} FROM {source}"
    if args.get("filter"):
        q += f" WHERE {args['filter']}"
    if args.get("order_by"):
        q += " ORDER BY " + ", ".join(sql_ident(c) for c in args["order_by"])
    rows = con.execute(q).to_arrow_table().to_pylist()
    if args.get("files"):
        info["files_scanned"], info["scanned_files"] = duckdb_files_read(con, q)
    return {"engine": "duckdb", "table": args.get("table"), "rows": rows, **info}


def duckdb_files_read(con, query):
    """The files DuckDB's Iceberg scan read for `query`, from EXPLAIN ANALYZE's JSON profile (the
    ICEBERG_SCAN operator's "Total Files Read" and "Filename(s)")."""
    con.execute("SET enable_profiling = 'json'")
    con.execute("SET profiling_output = ''")
    try:
        profile = json.loads(con.execute("EXPLAIN ANALYZE " + query).fetchall()[0][1])
    finally:
        con.execute("RESET enable_profiling")
    scans = []

    def walk(node):
        extra = node.get("extra_info") or {}
        if extra.get("Function") == "ICEBERG_SCAN":
            scans.append(extra)
        for child in node.get("children") or []:
            walk(child)

    walk(profile)
    if len(scans) != 1 or "Total Files Read" not in scans[0]:
        raise Failure(f"EXPLAIN ANALYZE has {len(scans)} ICEBERG_SCAN operators with a file count, expected 1")
    names = scans[0].get("Filename(s)") or ""
    if isinstance(names, str):
        names = [n for n in names.replace("\n", ",").split(",") if n.strip()]
    return int(scans[0]["Total Files Read"]), sorted(n.strip() for n in names)


def read_history(args, cat, s3):
    """Every data file each snapshot ADDED (from the manifests, deleted entries included), and the live
    data files of the current snapshot: evidence that no file was committed twice."""
    from pyiceberg.manifest import ManifestContent, ManifestEntryStatus

    check_tcp("s3", s3["endpoint"], 80)
    table = load_pyiceberg_table(load_pyiceberg_catalog(cat, s3), args["table"])
    added = []
    seen_manifests = set()
    for snap in table.snapshots():
        for manifest in snap.manifests(table.io):
            if manifest.content != ManifestContent.DATA or manifest.manifest_path in seen_manifests:
                continue
            seen_manifests.add(manifest.manifest_path)
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=False):
                if entry.status == ManifestEntryStatus.ADDED:
                    added.append({"snapshot_id": entry.snapshot_id, "file_path": entry.data_file.file_path,
                                  "record_count": entry.data_file.record_count})
    current = table.current_snapshot()
    live = [f["file_path"] for f in live_files(table, current)] if current is not None else []
    return {"table": args["table"], "added": added, "live": live,
            "snapshots": [{"snapshot_id": s.snapshot_id, "summary": s.summary.additional_properties} for s in table.snapshots()]}


# --- main ---------------------------------------------------------------------------------------------

def main():
    raw = sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read()
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as e:
        raise Failure(f"arguments are not JSON: {e}")
    cat, s3 = settings(args)
    mode, engine = args.get("mode", "read"), args.get("engine", "pyiceberg")
    split_table(args.get("table"))
    if mode == "create":
        out = create_sample(args, cat, s3)
    elif mode == "append":
        out = append_existing(args, cat, s3)
    elif mode == "footer":
        out = read_footers(args, cat, s3)
    elif mode == "history":
        out = read_history(args, cat, s3)
    elif mode != "read":
        raise Failure(f"unknown mode {mode!r} (read, create, append, footer or history)")
    elif engine == "pyiceberg":
        out = read_pyiceberg(args, cat, s3)
    elif engine == "duckdb":
        out = read_duckdb(args, cat, s3)
    else:
        raise Failure(f"unknown engine {engine!r} (pyiceberg or duckdb)")
    print(json.dumps(jsonable(out)))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - the CLI's contract is one JSON error object
        f = e if isinstance(e, Failure) else Failure(f"{type(e).__name__}: {e}")
        print(f"read_table: {f}", file=sys.stderr)
        print(json.dumps({"error": str(f), "service": f.service}))
        sys.exit(f.code)
