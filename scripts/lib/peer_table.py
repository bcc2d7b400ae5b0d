"""The tables of `npm run bench:peer` (scripts/bench-peer.ts) read back by a reader neither sink shares:
PyIceberg over the stack's REST catalog and S3, run with the readers venv's Python and the stack's
endpoints in the environment (ICEFLOE_CATALOG_URI, ICEFLOE_CATALOG_NAME, ICEFLOE_S3_*).

  python peer_table.py check NS.TABLE...   one JSON object on stdout: {"NS.TABLE": {...}, ...}, per table
      rows               rows of the current snapshot (a full scan of three columns, not the metadata's count)
      distinct_order_ids distinct order_id values (the generator's ids are unique: equal to rows when no
                         record was written twice)
      total_sum          sum of `total` (decimal, scale 2) as a string
      created_min_us / created_max_us   min and max of created_at, microseconds since the epoch (UTC)
      snapshots, data_files   how many snapshots the table has and data files its current snapshot lists
      schema             the table's schema as PyIceberg prints it (the two sinks map Avro types each their own way)
  python peer_table.py drop NS NS.TABLE... drops the tables with purge (the catalog deletes their files),
      then the namespace NS if it is empty; prints {"dropped": [...]}. A missing table is skipped.
Exit 2 when the catalog or S3 cannot be reached, 1 on any other failure (message on stderr).
"""
import json
import os
import sys


def env(name, default=None):
    v = os.environ.get(name, default)
    if v is None:
        sys.exit(f"peer_table: {name} is not set (source $ICEFLOE_RUN/endpoints.env)")
    return v


def catalog():
    from pyiceberg.catalog.rest import RestCatalog

    return RestCatalog(
        env("ICEFLOE_CATALOG_NAME", "icefloe"),
        **{
            "uri": env("ICEFLOE_CATALOG_URI"),
            "warehouse": env("ICEFLOE_CATALOG_WAREHOUSE", "s3://warehouse/"),
            "s3.endpoint": env("ICEFLOE_S3_ENDPOINT"),
            "s3.access-key-id": env("ICEFLOE_S3_ACCESS_KEY"),
            "s3.secret-access-key": env("ICEFLOE_S3_SECRET_KEY"),
            "s3.region": env("ICEFLOE_S3_REGION", "us-east-1"),
            "s3.path-style-access": "true",
        },
    )


def check(cat, name):
    import pyarrow as pa
    import pyarrow.compute as pc

    table = cat.load_table(name)
    snap = table.current_snapshot()
    if snap is None:
        return {"rows": 0, "distinct_order_ids": 0, "total_sum": "0", "created_min_us": None, "created_max_us": None,
                "snapshots": 0, "data_files": 0, "schema": str(table.schema())}
    scan = table.scan(selected_fields=("order_id", "total", "created_at"))
    data_files = sum(1 for _ in scan.plan_files())
    t = scan.to_arrow()
    created = t.column("created_at")
    # Either sink's timestamp type (with or without a zone, micro- or nanoseconds): as epoch microseconds.
    unit = created.type.unit
    ints = pc.cast(created, pa.timestamp(unit)).cast(pa.int64())
    scale = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 0.001}[unit]
    mn, mx = pc.min(ints).as_py(), pc.max(ints).as_py()
    total = pc.sum(t.column("total")).as_py()
    return {
        "rows": t.num_rows,
        "distinct_order_ids": pc.count_distinct(t.column("order_id")).as_py(),
        "total_sum": str(total),
        "created_min_us": None if mn is None else int(mn * scale),
        "created_max_us": None if mx is None else int(mx * scale),
        "snapshots": len(table.metadata.snapshots),
        "data_files": data_files,
        "schema": str(table.schema()),
    }


def drop(cat, namespace, names):
    from pyiceberg.exceptions import NamespaceNotEmptyError, NoSuchNamespaceError, NoSuchTableError

    dropped = []
    for name in names:
        try:
            cat.purge_table(name)
            dropped.append(name)
        except NoSuchTableError:
            pass
    try:
        if not cat.list_tables(namespace):
            cat.drop_namespace(namespace)
            dropped.append(namespace)
    except (NoSuchNamespaceError, NamespaceNotEmptyError):
        pass
    return {"dropped": dropped}


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("check", "drop"):
        sys.exit(__doc__)
    try:
        cat = catalog()
        if sys.argv[1] == "check":
            out = {name: check(cat, name) for name in sys.argv[2:]}
        else:
            out = drop(cat, sys.argv[2], sys.argv[3:])
    except OSError as e:
        print(f"peer_table: the catalog or S3 is not reachable: {e}", file=sys.stderr)
        sys.exit(2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
