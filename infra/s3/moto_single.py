"""moto's S3 server, single-threaded, durable across restarts: `python moto_single.py HOST PORT [STATE]`.

Builds the same WSGI app as `moto_server` (moto/server.py) but serves it one request at a time. moto
checks If-None-Match / If-Match and then writes, without a lock, so under its default threaded
server two conditional PUTs can both succeed; serving one request at a time makes the check and the
write effectively atomic, which our fencing tests rely on. Werkzeug answers `Expect: 100-continue`
itself and closes every connection (`Connection: close`), so an idle keep-alive client cannot hold
the single thread.

moto keeps objects in memory. With STATE (the stack passes $ICEFLOE_RUN/data/s3/state.pickle) the
store outlives the process: on SIGTERM or SIGINT the server finishes the request it is serving, stops
accepting, and pickles every S3 backend's buckets (objects with their bytes, etags, metadata and
versions; multipart uploads in progress with their parts) to STATE, written to a temporary file and
renamed, so a crash mid-save leaves the previous state whole; at start it loads STATE when present.
Without it a restart of this server (`scripts/stack stop s3` / `start s3`, as the stack suite does)
would drop every object while the catalog's rows in PostgreSQL, which survive, still point at them.
moto's FakeKey is picklable by design (__getstate__ copies its value out of its temporary buffer). A
SIGKILL saves nothing: the next start loads the state of the last clean stop. `scripts/stack down`
removes the run directory, state included.
"""
import os
import pickle
import signal
import sys
import time

from werkzeug.serving import make_server

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from moto.s3.models import s3_backends


class Handler(MotoRequestHandler):
    # A client that connects and then sends nothing would block everyone else: drop it after 60 s.
    timeout = 60


def log(msg: str) -> None:
    print(f"moto_single: {msg}", file=sys.stderr, flush=True)


def snapshot() -> dict:
    """Every S3 backend's buckets, by (account, partition), and the bucket → account index."""
    return {
        "version": 1,
        "backends": {(account, region): backend.buckets for account, region, backend in s3_backends.iter_backends()},
        "bucket_accounts": dict(s3_backends.bucket_accounts),
    }


def save(path: str) -> None:
    t0 = time.monotonic()
    state = snapshot()
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    objects = sum(len(b.keys) for buckets in state["backends"].values() for b in buckets.values())
    log(f"saved {objects} objects in {len(state['bucket_accounts'])} buckets to {path} "
        f"({os.path.getsize(path)} bytes, {time.monotonic() - t0:.1f}s)")


def load(path: str) -> None:
    try:
        with open(path, "rb") as f:
            state = pickle.load(f)
    except Exception as e:  # a truncated or foreign file: say which and how to start afresh
        sys.exit(f"moto_single: cannot load the saved S3 state {path}: {e!r}; "
                 f"remove it to start with an empty store (objects the catalog points at are then gone)")
    for (account, region), buckets in state["backends"].items():
        s3_backends[account][region].buckets = buckets
    s3_backends.bucket_accounts.update(state["bucket_accounts"])
    objects = sum(len(b.keys) for buckets in state["backends"].values() for b in buckets.values())
    log(f"loaded {objects} objects in {len(state['bucket_accounts'])} buckets from {path}")


def main() -> None:
    host = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 9000
    state_path = sys.argv[3] if len(sys.argv) > 3 else None
    os.environ.setdefault("MOTO_PORT", str(port))
    if state_path and os.path.exists(state_path):
        load(state_path)

    stopping = False

    def stop(*_: object) -> None:
        # Only a flag: the request being served completes, then the loop below ends and saves.
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    app = DomainDispatcherApplication(create_backend_app)
    srv = make_server(host, port, app, threaded=False, processes=1, request_handler=Handler)
    srv.timeout = 0.5  # handle_request returns at least this often, so a stop is seen within 0.5 s
    log(f"serving on http://{host}:{port}" + (f", state {state_path}" if state_path else ", in memory only"))
    try:
        while not stopping:
            srv.handle_request()
    finally:
        srv.server_close()
    if state_path:
        save(state_path)


if __name__ == "__main__":
    main()
