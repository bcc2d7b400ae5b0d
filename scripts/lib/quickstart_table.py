"""Is the quickstart's Iceberg table whole? `python quickstart_table.py check|drop NS.TABLE`, run with the
readers venv's Python (PyIceberg, boto3) and the stack's endpoints in the environment (endpoints.env).

check: prints one JSON object on stdout:
  {"state": "ok", "snapshots": N, "files": N}        the catalog loads it and every file it lists is in S3
  {"state": "absent", "missing": "table"|"namespace"} the worker creates it (auto-create)
  {"state": "broken", "reason": "...", "missing": [...]}
      the catalog keeps the entry but files it points at are gone: its metadata file (the catalog then
      answers 404 NotFoundException or 500 for the table), or its manifest list, manifests or data files.
      That happens when the S3 store is emptied under a catalog that keeps its rows, e.g. an S3 server
      restarted without its saved state; every task loading the table would fail.
drop: drops the catalog entry only (DELETE without purge: the files are gone anyway); prints {"dropped": ...}.
Any other answer (the catalog down, a 401) exits 2 with the reason on stderr: that is not ours to repair.
"""
import json
import os
import sys
import urllib.error
import urllib.request

# What an existence check may cost: the quickstart's table holds a few hundred files after many runs.
MAX_FILES_CHECKED = 5000


def env(name, default=None):
    v = os.environ.get(name, default)
    if v is None:
        sys.exit(f"quickstart_table: {name} is not set (source $ICEFLOE_RUN/endpoints.env)")
    return v


def rest(method, path):
    """(status, parsed JSON body or {}) of one REST catalog call."""
    uri = env("ICEFLOE_CATALOG_URI").rstrip("/")
    req = urllib.request.Request(f"{uri}{path}", method=method, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            body = r.read()
            return r.status, (json.loads(body) if body else {})
    except urllib.error.HTTPError as e:
        body = e.read()
        try:
            return e.code, json.loads(body) if body else {}
        except ValueError:
            return e.code, {"error": {"message": body.decode("utf-8", "replace")[:300]}}
    except (urllib.error.URLError, OSError) as e:
        print(f"the Iceberg REST catalog at {uri} is not reachable ({e}): is the stack up? scripts/stack status", file=sys.stderr)
        sys.exit(2)


def err(body):
    e = body.get("error") or {}
    return e.get("type", ""), e.get("message", "")


def s3_client():
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3", endpoint_url=env("ICEFLOE_S3_ENDPOINT"), region_name=env("ICEFLOE_S3_REGION", "us-east-1"),
        aws_access_key_id=env("ICEFLOE_S3_ACCESS_KEY"), aws_secret_access_key=env("ICEFLOE_S3_SECRET_KEY"),
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3}))


def s3_exists(s3, location):
    from botocore.exceptions import ClientError

    if not location.startswith("s3://"):
        return True  # not on this stack's S3: not ours to check
    bucket, _, key = location[len("s3://"):].partition("/")
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return True
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NoSuchBucket", "NotFound"):
            return False
        raise


def table_path(ns, tbl):
    return f"/v1/namespaces/{ns.replace('.', '%1F')}/tables/{tbl}"


def check(ns, tbl):
    status, body = rest("GET", f"/v1/namespaces/{ns.replace('.', '%1F')}")
    if status == 404:
        return {"state": "absent", "missing": "namespace"}
    if status != 200:
        raise SystemExit(f"quickstart_table: the catalog answered {status} for namespace {ns}: {err(body)}")
    status, body = rest("GET", table_path(ns, tbl))
    kind, message = err(body)
    if status == 404 and kind in ("NoSuchTableException", "NoSuchNamespaceException"):
        return {"state": "absent", "missing": "table"}
    if status != 200:
        # The catalog has the entry (the namespace is there and the answer is not "no such table") but
        # cannot load it: its metadata file is gone (404 NotFoundException, or a 500 from S3FileIO).
        lost = kind == "NotFoundException" or "does not exist" in message or "NoSuchKey" in message or "Not Found" in message
        if not lost:
            print(f"the Iceberg REST catalog answered {status} {kind} for {ns}.{tbl}: {message[:300]}", file=sys.stderr)
            sys.exit(2)
        return {"state": "broken", "reason": f"the catalog cannot load it: {status} {kind}: {message[:200]}", "missing": []}

    # Loaded: its metadata file is there. Every file it lists must be too.
    s3 = s3_client()
    metadata = body.get("metadata") or {}
    location = body.get("metadata-location", "")
    if location and not s3_exists(s3, location):
        return {"state": "broken", "reason": f"its metadata file {location} is gone", "missing": [location]}
    current = metadata.get("current-snapshot-id")
    snapshots = metadata.get("snapshots") or []
    if current is None or current == -1:
        return {"state": "ok", "snapshots": len(snapshots), "files": 0}
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog("quickstart", type="rest", uri=env("ICEFLOE_CATALOG_URI"), warehouse=env("ICEFLOE_CATALOG_WAREHOUSE", "s3://warehouse/"), **{
        "s3.endpoint": env("ICEFLOE_S3_ENDPOINT"), "s3.access-key-id": env("ICEFLOE_S3_ACCESS_KEY"),
        "s3.secret-access-key": env("ICEFLOE_S3_SECRET_KEY"), "s3.region": env("ICEFLOE_S3_REGION", "us-east-1"),
        "s3.force-virtual-addressing": "false"})
    table = catalog.load_table(f"{ns}.{tbl}")
    snap = table.current_snapshot()
    missing = []
    if not s3_exists(s3, snap.manifest_list):
        return {"state": "broken", "reason": f"its manifest list {snap.manifest_list} is gone", "missing": [snap.manifest_list]}
    manifests = snap.manifests(table.io)
    missing = [m.manifest_path for m in manifests if not s3_exists(s3, m.manifest_path)]
    if missing:
        return {"state": "broken", "reason": f"{len(missing)} of its {len(manifests)} manifests are gone, e.g. {missing[0]}", "missing": missing}
    files = [t.file.file_path for t in table.scan().plan_files()]
    missing = [f for f in files[:MAX_FILES_CHECKED] if not s3_exists(s3, f)]
    if missing:
        return {"state": "broken", "reason": f"{len(missing)} of its {len(files)} data files are gone, e.g. {missing[0]}", "missing": missing}
    return {"state": "ok", "snapshots": len(snapshots), "files": len(files)}


def drop(ns, tbl):
    status, body = rest("DELETE", table_path(ns, tbl))
    if status not in (200, 204, 404):
        raise SystemExit(f"quickstart_table: dropping {ns}.{tbl} failed: {status} {err(body)}")
    return {"dropped": f"{ns}.{tbl}", "status": status}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("check", "drop") or "." not in sys.argv[2]:
        sys.exit("usage: quickstart_table.py check|drop NAMESPACE.TABLE")
    ns, _, tbl = sys.argv[2].rpartition(".")
    print(json.dumps(check(ns, tbl) if sys.argv[1] == "check" else drop(ns, tbl)))


if __name__ == "__main__":
    main()
