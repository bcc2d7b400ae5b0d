"""Drives a Kafka Connect REST server with a real client library: kafka-connect-py from PyPI (module
kafka_connect, installed by scripts/stack.d/clients.sh). Every call goes through the library's own
KafkaConnect methods, never raw HTTP, so what this prints is what that library made of the answers.

    $ICEFLOE_CONNECT_CLIENT_PYTHON test/clients/kafka-connect-py/driver.py http://127.0.0.1:8083

Same protocol as test/clients/sourcelab/Driver.java: one JSON command a line on stdin
({"op": "create", "name": "c1", "config": {...}}; ops version, list, expanded, plugins, create, get,
config, update, status, tasks, topics, pause, resume, stop, restart, delete), one JSON answer a line on
stdout: {"op": ..., "ok": true, "result": ...} or {"op": ..., "ok": false, "error": {"type", "message",
"errorCode"}}.
"""
import json
import logging
import sys

from kafka_connect import KafkaConnect
from requests.exceptions import HTTPError, RequestException


def call(kc, op, command):
    name = command.get("name")
    config = command.get("config") or {}
    if op == "version":
        return kc.get_cluster_info()
    if op == "list":
        return kc.list_connectors()
    if op == "expanded":
        return kc.list_connectors(expand="status")
    if op == "plugins":
        return kc.list_connector_plugins()
    if op == "create":
        # The library posts the dict as given: Connect's {"name", "config"} body.
        return kc.create_connector({"name": name, "config": config})
    if op == "get":
        return kc.get_connector(name)
    if op == "config":
        return kc.get_connector_config(name)
    if op == "update":
        return kc.update_connector(name, config)
    if op == "status":
        return kc.get_connector_status(name)
    if op == "tasks":
        return kc.list_connector_tasks(name)
    if op == "topics":
        return kc.list_connector_topics(name)
    if op == "pause":
        return kc.pause_connector(name)
    if op == "resume":
        return kc.resume_connector(name)
    if op == "stop":
        return kc.stop_connector(name)
    if op == "restart":
        return kc.restart_connector(name)
    if op == "delete":
        return kc.delete_connector(name)
    raise ValueError(f"unknown op {op}")


def main():
    if len(sys.argv) != 2:
        print("usage: driver.py <connect-url>  (commands as JSON lines on stdin)", file=sys.stderr)
        sys.exit(2)
    # The library logs each call at INFO on the root logger: keep stdout for answers only.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    kc = KafkaConnect(url=sys.argv[1])
    for line in sys.stdin:
        if not line.strip():
            continue
        command = json.loads(line)
        op = command.get("op")
        try:
            answer = {"op": op, "ok": True, "result": call(kc, op, command)}
        except HTTPError as e:
            # raise_for_status() keeps the response; the library's own HTTPError(text) does not.
            response = e.response
            error = {"type": type(e).__name__, "message": response.text if response is not None else str(e)}
            if response is not None:
                error["errorCode"] = response.status_code
            answer = {"op": op, "ok": False, "error": error}
        except (RequestException, ValueError) as e:
            # A time-out, a refused connection, or a body that is not JSON where the library parses one.
            answer = {"op": op, "ok": False, "error": {"type": type(e).__name__, "message": str(e)}}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
