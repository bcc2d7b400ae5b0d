"""PyIceberg as an independent writer and reader of Iceberg Avro files (manifests, manifest lists) and
table metadata, for the unit tests of src/iceberg/.

  generate OUTDIR      write manifests and manifest lists with PyIceberg's own Avro writer, one per codec
                       (null, deflate, zstandard, snappy), plus expected.json describing their content, and
                       pyiceberg-metadata.json (the hand-written Java-style fixture parsed and re-serialised
                       by PyIceberg). Run once; the outputs are committed under test/fixtures/iceberg/.
  check LIST_PATH      read a manifest list and every manifest it names (local paths) with PyIceberg and
                       print their content as JSON (longs as strings) for the Node test to compare.

PyIceberg's snappy codec needs python-snappy, which the venv lacks; pyarrow's snappy stands in for it.
"""

import base64
import json
import os
import sys
import types
from collections.abc import Mapping
from decimal import Decimal

import pyarrow as pa


def _install_snappy_shim() -> None:
    def compress(data: bytes) -> bytes:
        return pa.compress(data, codec="snappy", asbytes=True)

    def decompress(data: bytes) -> bytes:
        # raw snappy starts with the uncompressed length as a varint
        n = shift = i = 0
        while True:
            b = data[i]
            n |= (b & 0x7F) << shift
            i += 1
            if b < 0x80:
                break
            shift += 7
        return pa.decompress(data, decompressed_size=n, codec="snappy", asbytes=True)

    mod = types.ModuleType("snappy")
    mod.compress = compress  # type: ignore[attr-defined]
    mod.decompress = decompress  # type: ignore[attr-defined]
    sys.modules["snappy"] = mod


_install_snappy_shim()

from pyiceberg.io.pyarrow import PyArrowFileIO  # noqa: E402
from pyiceberg.manifest import (  # noqa: E402
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.table.metadata import TableMetadataUtil  # noqa: E402
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform, TruncateTransform  # noqa: E402
from pyiceberg.typedef import Record  # noqa: E402
from pyiceberg.types import (  # noqa: E402
    DecimalType,
    DoubleType,
    LongType,
    NestedField,
    StringType,
    TimestamptzType,
)

SNAPSHOT_ID = 8744736658442914487  # > 2^53
PARENT_ID = 3051729675574597004
OTHER_SNAPSHOT_ID = 6699417712345678901

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "region", StringType(), required=False),
    NestedField(3, "ts", TimestamptzType(), required=False),
    NestedField(4, "amount", DecimalType(10, 2), required=False),
    NestedField(5, "name", StringType(), required=False),
    NestedField(6, "score", DoubleType(), required=False),
    schema_id=3,
)

SPEC = PartitionSpec(
    PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region"),
    PartitionField(source_id=3, field_id=1001, transform=DayTransform(), name="ts_day"),
    PartitionField(source_id=1, field_id=1002, transform=BucketTransform(16), name="id_bucket"),
    PartitionField(source_id=4, field_id=1003, transform=IdentityTransform(), name="amount"),
    PartitionField(source_id=5, field_id=1004, transform=TruncateTransform(4), name="name_trunc"),
    spec_id=2,
)

FILES = [
    {
        "path": "s3://bucket/wh/db/t/data/region=eu/f1.parquet",
        "partition": ["eu", 17486, 3, Decimal("14.20"), "icef"],
        "records": 100,
        "size": 4096,
        "column_sizes": {1: 800, 2: 300},
        "value_counts": {1: 100, 2: 100},
        "null_value_counts": {1: 0, 2: 5},
        "nan_value_counts": {6: 2},
        "lower_bounds": {1: (-5).to_bytes(8, "little", signed=True), 2: b"eu"},
        "upper_bounds": {1: (SNAPSHOT_ID).to_bytes(8, "little", signed=True), 2: b"ev"},
        "split_offsets": [4, 2048],
        "sort_order_id": 0,
    },
    {
        "path": "s3://bucket/wh/db/t/data/region=null/f2.parquet",
        "partition": [None, -1, 15, Decimal("-0.50"), None],
        "records": 7,
        "size": 1000,
        "column_sizes": {1: 56},
        "value_counts": {1: 7},
        "null_value_counts": {1: 0},
        "nan_value_counts": None,
        "lower_bounds": {1: (1).to_bytes(8, "little", signed=True)},
        "upper_bounds": {1: (7).to_bytes(8, "little", signed=True)},
        "split_offsets": [4],
        "sort_order_id": None,
    },
]


def _data_file(f: dict) -> DataFile:
    return DataFile.from_args(
        _table_format_version=2,
        content=DataFileContent.DATA,
        file_path=f["path"],
        file_format=FileFormat.PARQUET,
        partition=Record(*f["partition"]),
        record_count=f["records"],
        file_size_in_bytes=f["size"],
        column_sizes=f["column_sizes"],
        value_counts=f["value_counts"],
        null_value_counts=f["null_value_counts"],
        nan_value_counts=f["nan_value_counts"],
        lower_bounds=f["lower_bounds"],
        upper_bounds=f["upper_bounds"],
        key_metadata=None,
        split_offsets=f["split_offsets"],
        equality_ids=None,
        sort_order_id=f["sort_order_id"],
    )


def _jsonable(v):  # noqa: ANN001, ANN202
    if isinstance(v, bytes):
        return {"hex": v.hex()}
    if isinstance(v, Decimal):
        return {"decimal": str(v)}
    if isinstance(v, bool) or v is None or isinstance(v, str) or isinstance(v, float):
        return v
    if isinstance(v, int):
        return str(v)
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, Record):
        return [_jsonable(x) for x in v._data]
    if hasattr(v, "value"):  # enums
        return _jsonable(v.value)
    return str(v)


def _manifest_file_json(m) -> dict:  # noqa: ANN001
    return {
        "manifest_path": m.manifest_path,
        "manifest_length": str(m.manifest_length),
        "partition_spec_id": m.partition_spec_id,
        "content": int(m.content),
        "sequence_number": str(m.sequence_number),
        "min_sequence_number": str(m.min_sequence_number),
        "added_snapshot_id": str(m.added_snapshot_id),
        "added_files_count": m.added_files_count,
        "existing_files_count": m.existing_files_count,
        "deleted_files_count": m.deleted_files_count,
        "added_rows_count": str(m.added_rows_count),
        "existing_rows_count": str(m.existing_rows_count),
        "deleted_rows_count": str(m.deleted_rows_count),
        "partitions": None
        if m.partitions is None
        else [
            {
                "contains_null": p.contains_null,
                "contains_nan": p.contains_nan,
                "lower_bound": None if p.lower_bound is None else p.lower_bound.hex(),
                "upper_bound": None if p.upper_bound is None else p.upper_bound.hex(),
            }
            for p in m.partitions
        ],
    }


def _entry_json(e) -> dict:  # noqa: ANN001
    df = e.data_file
    return {
        "status": int(e.status),
        "snapshot_id": None if e.snapshot_id is None else str(e.snapshot_id),
        "sequence_number": None if e.sequence_number is None else str(e.sequence_number),
        "file_sequence_number": None if e.file_sequence_number is None else str(e.file_sequence_number),
        "content": int(df.content),
        "file_path": df.file_path,
        "file_format": str(df.file_format.value if hasattr(df.file_format, "value") else df.file_format),
        "partition": _jsonable(df.partition),
        "record_count": str(df.record_count),
        "file_size_in_bytes": str(df.file_size_in_bytes),
        "column_sizes": _jsonable(df.column_sizes),
        "value_counts": _jsonable(df.value_counts),
        "null_value_counts": _jsonable(df.null_value_counts),
        "nan_value_counts": _jsonable(df.nan_value_counts),
        "lower_bounds": _jsonable(df.lower_bounds),
        "upper_bounds": _jsonable(df.upper_bounds),
        "split_offsets": _jsonable(df.split_offsets),
        "sort_order_id": df.sort_order_id,
    }


def generate(outdir: str) -> None:
    io = PyArrowFileIO()
    expected: dict = {"codecs": {}}
    for codec in ["null", "deflate", "zstandard", "snappy"]:
        mpath = os.path.join(outdir, f"pyiceberg-manifest-{codec}.avro")
        lpath = os.path.join(outdir, f"pyiceberg-manifest-list-{codec}.avro")
        for p in (mpath, lpath):
            if os.path.exists(p):
                os.remove(p)
        with write_manifest(2, SPEC, SCHEMA, io.new_output(mpath), SNAPSHOT_ID, codec) as w:
            for f in FILES:
                w.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=SNAPSHOT_ID, data_file=_data_file(f)))
        manifest = w.to_manifest_file()
        # a second, carried-over manifest from an older snapshot (already has sequence numbers)
        carried = manifest.__class__.from_args(
            manifest_path="s3://bucket/wh/db/t/metadata/older-m0.avro",
            manifest_length=5120,
            partition_spec_id=0,
            content=0,
            sequence_number=3,
            min_sequence_number=2,
            added_snapshot_id=OTHER_SNAPSHOT_ID,
            added_files_count=4,
            existing_files_count=1,
            deleted_files_count=0,
            added_rows_count=400,
            existing_rows_count=10,
            deleted_rows_count=0,
            partitions=[],
            key_metadata=None,
        )
        with write_manifest_list(2, io.new_output(lpath), SNAPSHOT_ID, PARENT_ID, 5, codec) as lw:
            lw.add_manifests([manifest, carried])
        # what PyIceberg itself reads back is the expectation
        manifests = list(read_manifest_list(io.new_input(lpath)))
        expected["codecs"][codec] = {"manifest_list": [_manifest_file_json(m) for m in manifests]}
        entries = manifests[0].fetch_manifest_entry(io, discard_deleted=False)
        expected["codecs"][codec]["entries"] = [_entry_json(e) for e in entries]
    # manifest paths inside the lists point at local files; the tests use basenames only
    with open(os.path.join(outdir, "pyiceberg-expected.json"), "w") as fh:
        json.dump(expected, fh, indent=1, sort_keys=True)

    with open(os.path.join(outdir, "java-metadata-v2.json")) as fh:
        md = TableMetadataUtil.parse_raw(fh.read())
    with open(os.path.join(outdir, "pyiceberg-metadata.json"), "w") as fh:
        fh.write(md.model_dump_json(exclude_none=False))


def check(list_path: str) -> None:
    io = PyArrowFileIO()
    manifests = list(read_manifest_list(io.new_input(list_path)))
    out = {"manifest_list": [_manifest_file_json(m) for m in manifests], "entries": {}}
    for m in manifests:
        if os.path.exists(m.manifest_path):
            out["entries"][m.manifest_path] = [_entry_json(e) for e in m.fetch_manifest_entry(io, discard_deleted=False)]
    out["duckdb"] = _duckdb_rows([list_path, *[m.manifest_path for m in manifests if os.path.exists(m.manifest_path)]])
    print(json.dumps(out, sort_keys=True))


def _duckdb_rows(paths: list) -> dict:
    """Row counts through DuckDB's Avro reader (a third, C++ implementation); it has no zstandard codec."""
    import duckdb

    ext_dir = os.environ.get("ICEFLOE_DUCKDB_EXTENSION_DIR") or os.path.join(sys.prefix, "duckdb-extensions")
    con = duckdb.connect(config={"extension_directory": ext_dir, "autoinstall_known_extensions": False})
    con.execute("LOAD avro")
    rows = {}
    for p in paths:
        try:
            rows[p] = con.execute("select count(*) from read_avro(?)", [p]).fetchone()[0]
        except Exception as e:  # noqa: BLE001
            rows[p] = f"error: {e}"
    return rows


def read_metadata(path: str) -> None:
    with open(path) as fh:
        md = TableMetadataUtil.parse_raw(fh.read())
    print(md.model_dump_json())


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "generate":
        generate(sys.argv[2])
    elif mode == "check":
        check(sys.argv[2])
    elif mode == "metadata":
        read_metadata(sys.argv[2])
    else:
        raise SystemExit(f"unknown mode {mode}")
