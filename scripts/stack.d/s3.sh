# S3: moto's server (Apache-2.0, from PyPI, in the readers venv, which `readers` installs first),
# single-threaded through our launcher infra/s3/moto_single.py on 127.0.0.1:$S3_PORT, path-style, bucket
# $S3_BUCKET created at start.
# Why moto: the only registry-installable, license-compatible S3 emulator with conditional writes
# (If-None-Match: * on PutObject and CompleteMultipartUpload, If-Match). Its checks are check-then-write
# without a lock, so it is run single-threaded: one request at a time makes them effectively atomic.
# Limits: objects live in memory, one request at a time (slow: a correctness store, never a benchmark
# store), signatures are not verified (any key works), 5 MiB minimum part size as on AWS. Durable across
# `stop s3` / `start s3`: the launcher saves the store to data/s3/state.pickle on SIGTERM and loads it at
# start, so the catalog's rows (in PostgreSQL, which keeps its data too) never point at objects a restart
# dropped; a SIGKILL loses what changed since the last clean stop, and `down` removes it with the run dir.
# While it is down the REST catalog takes ~2 min to fail a request: for outage tests prefer the
# fault-injection proxy. It accepts the aws-chunked uploads with CRC32 checksum trailers that current
# AWS SDKs send by default (JS v3, Java v2 in Iceberg's bundle, boto3), so
# AWS_REQUEST_CHECKSUM_CALCULATION=when_required is not needed.
s3_timeout=90

s3_url() { echo "http://127.0.0.1:$S3_PORT"; }


s3_state() { echo "$ICEFLOE_RUN/data/s3/state.pickle"; }

s3_start() {
  mkdir -p "$(dirname "$(s3_state)")"
  start_bg s3 "$(readers_python)" "$ICEFLOE_ROOT/infra/s3/moto_single.py" 127.0.0.1 "$S3_PORT" "$(s3_state)"
  local i
  # Loading a saved store takes a few seconds per 100 MB on a loaded machine.
  for i in $(seq 1 "$(( s3_timeout * 2 ))"); do
    pid_of s3 >/dev/null || { tail -n 20 "$ICEFLOE_RUN/logs/s3.log" >&2; return 1; }
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$(s3_url)/")" = 200 ] && break
    sleep 0.5
  done
  # A signed CreateBucket, as a client would send it (moto accepts any credentials).
  S3_URL=$(s3_url) "$(readers_python)" - <<'EOF' >&2
import os, boto3
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=os.environ["S3_URL"], region_name=os.environ["S3_REGION"],
                  aws_access_key_id=os.environ["S3_ACCESS_KEY"], aws_secret_access_key=os.environ["S3_SECRET_KEY"],
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 10}))
try:
    s3.head_bucket(Bucket=os.environ["S3_BUCKET"])
except s3.exceptions.ClientError:
    s3.create_bucket(Bucket=os.environ["S3_BUCKET"])
EOF
}

# Saving the store on SIGTERM takes ~1 s per 100 MB: allow two minutes before the KILL that would lose it.
s3_stop() { stop_pid s3 120; }

# Up, and the bucket exists (HEAD on a path-style bucket URL is 200 only then).
s3_ready() {
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$(s3_url)/")" = 200 ] &&
    [ "$(curl -s -o /dev/null -I -w '%{http_code}' "$(s3_url)/$S3_BUCKET")" = 200 ]
}

s3_describe() { echo "S3 (moto $MOTO_VERSION, single-threaded, in memory, saved to $(s3_state) on stop) on $(s3_url), bucket $S3_BUCKET"; }

s3_env() {
  echo "ICEFLOE_S3_ENDPOINT=$(s3_url)"
  echo "ICEFLOE_S3_BUCKET=$S3_BUCKET"
  echo "ICEFLOE_S3_ACCESS_KEY=$S3_ACCESS_KEY"
  echo "ICEFLOE_S3_SECRET_KEY=$S3_SECRET_KEY"
  echo "ICEFLOE_S3_REGION=$S3_REGION"
}
