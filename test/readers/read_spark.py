#!/usr/bin/env python3
"""The third independent Iceberg reader of our tests: Apache Spark (PySpark with Iceberg's Spark runtime),
run with $ICEFLOE_SPARK_PYTHON (its own venv: scripts/stack.d/readers.sh) on Java 17 ($JAVA_HOME).

Usage: read_spark.py '<json>'   or   echo '<json>' | read_spark.py
Arguments: as read_table.py's mode "read" (table, filter as a Spark SQL WHERE clause, order_by,
  snapshot_id, s3; catalog.kind "rest" only), plus
  projections  column lists, each read again in the same session: selecting only primitive columns
               makes Iceberg use its vectorized (Arrow) Parquet reader, while any nested column selected
               means its row-based reader; each read says which ("columnar")
  queries      further reads in the same session (a session costs ~10 s): each {"table" (default: the
               main one), "filter" (a Spark SQL WHERE clause), "columns" (default all), "order_by"}
  jars         Iceberg's Spark runtime and AWS bundle, comma-separated (default $ICEFLOE_SPARK_JARS),
               passed as spark.jars: nothing is resolved through Ivy
  Spark cannot load a table with an Iceberg `time` column at all, whatever is selected
  (TypeToSparkType: "Spark does not support time fields"; apache/iceberg#16663).
Output (stdout, one JSON object): {"engine": "spark", "table", "rows", "columnar", "projections":
  [{"columns", "columnar", "rows"}], "queries": [{"table", "filter", "columnar", "rows"}],
  "snapshots": [{snapshot_id, parent_snapshot_id, timestamp_ms,
  operation, summary}], "spark_version", "timings": {"session_s", "read_s"}}. Values as read_table.py
  gives them (through its jsonable()), except maps: a list of [key, value] pairs in Spark's order
  (PySpark's Row conversion would make them dicts built from a java.util.HashMap, losing the order).
  TIMESTAMP (with zone) values are UTC wall-clock times: the session and this process both run in UTC.
Errors: as read_table.py (exit 2 when the catalog or S3 is not reachable, 3 when the table does not exist).
"""
import json
import os
import sys
import tempfile
import time

from read_table import Failure, check_catalog, check_tcp, jsonable, settings, split_table

CATALOG = "ice"  # the Spark catalog name the table is read through


def session(cat, s3, jars, scratch):
    from pyspark.sql import SparkSession

    c = f"spark.sql.catalog.{CATALOG}"
    conf = {
        "spark.master": "local[1]",
        "spark.app.name": "icefloe-read-spark",
        "spark.jars": jars,
        "spark.ui.enabled": "false",
        "spark.driver.memory": "512m",
        # A short-lived JVM on 2 cores: C1 only and the serial collector start faster (~2 s of ~10 s).
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "1",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.warehouse.dir": os.path.join(scratch, "warehouse"),
        c: "org.apache.iceberg.spark.SparkCatalog",
        f"{c}.type": "rest",
        f"{c}.uri": cat["uri"],
        f"{c}.warehouse": cat["warehouse"],
        f"{c}.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        f"{c}.s3.endpoint": s3["endpoint"],
        f"{c}.s3.path-style-access": "true",
        f"{c}.s3.access-key-id": s3["access_key"],
        f"{c}.s3.secret-access-key": s3["secret_key"],
        f"{c}.client.region": s3["region"],
        # No table cache: every read asks the catalog for the current metadata.
        f"{c}.cache-enabled": "false",
    }
    builder = SparkSession.builder
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def ident(name):
    return "`" + str(name).replace("`", "``") + "`"


def lit(s):
    return "'" + str(s).replace("\\", "\\\\").replace("'", "\\'") + "'"


def value_expr(expr, dtype):
    """A Spark SQL expression giving `expr` with every map turned into an array of key/value structs
    (map_entries keeps Spark's entry order, which PySpark's Row conversion of a map loses), or None when
    `dtype` holds no map."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(dtype, MapType):
        k = value_expr("e.key", dtype.keyType) or "e.key"
        v = value_expr("e.value", dtype.valueType) or "e.value"
        return f"transform(map_entries({expr}), e -> named_struct('key', {k}, 'value', {v}))"
    if isinstance(dtype, ArrayType):
        inner = value_expr("x", dtype.elementType)
        return None if inner is None else f"transform({expr}, x -> {inner})"
    if isinstance(dtype, StructType):
        parts = [(f.name, value_expr(f"{expr}.{ident(f.name)}", f.dataType)) for f in dtype.fields]
        if all(p is None for _, p in parts):
            return None
        body = ", ".join(f"{lit(n)}, {p or expr + '.' + ident(n)}" for n, p in parts)
        return f"if({expr} IS NULL, NULL, named_struct({body}))"
    return None


def plain(v, dtype):
    """A collected value as JSON-able Python: Rows to dicts, map entry arrays to [key, value] pairs."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    if v is None:
        return None
    if isinstance(dtype, MapType):
        return [[plain(e["key"], dtype.keyType), plain(e["value"], dtype.valueType)] for e in v]
    if isinstance(dtype, ArrayType):
        return [plain(e, dtype.elementType) for e in v]
    if isinstance(dtype, StructType):
        return {f.name: plain(v[f.name], f.dataType) for f in dtype.fields}
    return jsonable(v)


def query(spark, sql, order_by):
    """(rows, columnar): the rows as JSON-able dicts, and whether Spark read them in columnar batches
    (Iceberg's vectorized Parquet reader: only when every selected column is primitive) or row by row."""
    df = spark.sql(sql)
    exprs = [(f.name, f.dataType, value_expr(ident(f.name), f.dataType)) for f in df.schema.fields]
    df = df.selectExpr(*[f"{e} AS {ident(n)}" if e else ident(n) for n, _, e in exprs])
    if order_by:
        df = df.orderBy(*order_by)
    columnar = "ColumnarToRow" in df._jdf.queryExecution().executedPlan().toString()
    return [{n: plain(r[n], t) for n, t, _ in exprs} for r in df.collect()], columnar


def read(args, cat, s3):
    if cat["kind"] != "rest":
        raise Failure("Spark reads through the REST catalog (catalog.kind rest)")
    jars = args.get("jars") or os.environ.get("ICEFLOE_SPARK_JARS")
    if not jars:
        raise Failure("no Iceberg Spark jars: set ICEFLOE_SPARK_JARS (scripts/stack.d/readers.sh installs them)")
    check_tcp("s3", s3["endpoint"], 80)
    check_catalog(cat["uri"])
    ns, tbl = split_table(args["table"])
    name = f"{CATALOG}.{ident(ns)}.{ident(tbl)}"
    with tempfile.TemporaryDirectory(prefix="icefloe-spark-") as scratch:
        os.environ["SPARK_LOCAL_DIRS"] = scratch
        t0 = time.monotonic()
        spark = session(cat, s3, jars, scratch)
        t1 = time.monotonic()
        try:
            if not spark.catalog.tableExists(name):
                raise Failure(f"table {args['table']} does not exist (Spark, REST catalog {cat['uri']})", "catalog", 3)
            source = name
            if args.get("snapshot_id") is not None:
                source += f" VERSION AS OF {int(args['snapshot_id'])}"
            where = f" WHERE {args['filter']}" if args.get("filter") else ""
            rows, columnar = query(spark, f"SELECT * FROM {source}{where}", args.get("order_by"))
            projections = []
            for cols in args.get("projections") or []:
                p_rows, p_columnar = query(spark, f"SELECT {', '.join(ident(c) for c in cols)} FROM {source}{where}",
                                           args.get("order_by"))
                projections.append({"columns": cols, "columnar": p_columnar, "rows": p_rows})
            queries = []
            for q in args.get("queries") or []:
                q_ns, q_tbl = split_table(q.get("table") or args["table"])
                cols = ", ".join(ident(c) for c in q["columns"]) if q.get("columns") else "*"
                q_where = f" WHERE {q['filter']}" if q.get("filter") else ""
                q_rows, q_columnar = query(spark, f"SELECT {cols} FROM {CATALOG}.{ident(q_ns)}.{ident(q_tbl)}{q_where}",
                                           q.get("order_by"))
                queries.append({"table": q.get("table") or args["table"], "filter": q.get("filter"),
                                "columnar": q_columnar, "rows": q_rows})
            snaps = [{"snapshot_id": s["snapshot_id"], "parent_snapshot_id": s["parent_id"],
                      "timestamp_ms": int(s["committed_at"].timestamp() * 1000), "operation": s["operation"],
                      "summary": dict(s["summary"] or {})}
                     for s in spark.sql(f"SELECT * FROM {name}.snapshots ORDER BY committed_at").collect()]
            version = spark.version
        finally:
            spark.stop()
        t2 = time.monotonic()
    return {"engine": "spark", "table": args["table"], "rows": rows, "columnar": columnar,
            "projections": projections, "queries": queries, "snapshots": snaps, "spark_version": version,
            "timings": {"session_s": round(t1 - t0, 2), "read_s": round(t2 - t1, 2)}}


def main():
    raw = sys.argv[1] if len(sys.argv) > 1 else sys.stdin.read()
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as e:
        raise Failure(f"arguments are not JSON: {e}")
    if args.get("mode", "read") != "read":
        raise Failure("read_spark.py only reads (mode read)")
    # UTC everywhere: PySpark turns TIMESTAMP (with zone) values into naive datetimes in the process's zone.
    os.environ["TZ"] = "UTC"
    time.tzset()
    # Loopback only, and scratch space under the session's temporary directory (set in read()).
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    cat, s3 = settings(args)
    split_table(args.get("table"))
    print(json.dumps(jsonable(read(args, cat, s3))))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - the CLI's contract is one JSON error object
        f = e if isinstance(e, Failure) else Failure(f"{type(e).__name__}: {e}")
        print(f"read_spark: {f}", file=sys.stderr)
        print(json.dumps({"error": str(f), "service": f.service}))
        sys.exit(f.code)
