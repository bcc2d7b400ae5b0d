/**
 * The `icefloe` command's help: the overview (`icefloe help`, and on stderr for no or an unknown command)
 * and each subcommand's own text (`icefloe <command> --help`): synopsis, options with their defaults, and
 * examples that run against the local stack (test/e2e/docs-commands.test.ts runs the README's).
 *
 * Owns: the help texts. Must not: parse arguments (options.ts) or run anything.
 */
import { DEFAULT_BOOTSTRAP_SERVERS, DEFAULT_REGISTRY_URL } from './options.ts';

const ENDPOINTS = `  --bootstrap-servers HOSTS  Kafka (default $ICEFLOE_BOOTSTRAP_SERVERS, else ${DEFAULT_BOOTSTRAP_SERVERS})
  --registry-url URL         Confluent-API schema registry (default $ICEFLOE_REGISTRY_URL, else
                             ${DEFAULT_REGISTRY_URL})`;

export const USAGE = `usage: icefloe <command> [options]

commands:
  standalone WORKER.properties [CONNECTOR.json...]
            run the worker with these connectors (Kafka's connect-standalone shape)
  distributed WORKER.properties
            run a worker of the cluster its group.id names (Kafka's connect-distributed shape)
  generate  produce generated order events to Kafka (registering their schema), for quickstarts and tests
  produce   produce your own records (JSON lines, Avro or Protobuf) to a topic
  consume   print a topic's records, decoded, as JSON lines
  positions WORKER.properties CONNECTOR.json --table NS.TABLE [--reapply | --adopt [--holds-group-offsets]]
            a table's control positions and the connector's; recovers a rolled-back table
  replay    WORKER.properties CONNECTOR.json --table NS.TABLE --snapshot ID
            rolls a table back to a snapshot and the connector's offsets to what it holds (connector stopped)
  dead-letters replay WORKER.properties CONNECTOR.json [--to-topic TOPIC] [--dry-run]
            puts the dead-letter topic's records back on their topics, exactly once, once their cause is fixed
  version   print Icefloe's version and the Node runtime
  help      this text

Every command explains itself: icefloe <command> --help
(generate, produce and consume are tools of the source tree, tools/: not in the worker image)
`;

const STANDALONE = `usage: icefloe standalone [--exit-on-failure] WORKER.properties [CONNECTOR.json...]

Runs the worker with the connectors in the JSON files (Kafka's connect-standalone shape): each connector's
tasks.max sink tasks and one committer. SIGTERM or Ctrl-C (SIGINT) stops it cleanly: every task commits
its last cycle and the committer applies it.

arguments:
  WORKER.properties          worker settings: bootstrap.servers, converters, consumer.*, producer.*,
                             icefloe.* (docs/configuration.md)
  CONNECTOR.json...          connector configurations (the Apache Iceberg sink's keys); none: connectors
                             are created through the REST API (PUT /connectors/NAME/config)

options:
  --exit-on-failure          exit non-zero with a summary once every task of every connector has failed
                             for a reason a restart cannot fix (the default while there is no REST API
                             to report FAILED tasks)

environment:
  ICEFLOE_LOG_LEVEL          trace | debug | info | warn | error (default info)
  ICEFLOE_LOG_FORMAT         auto | json | pretty: overrides the worker property icefloe.log.format
                             (default auto: readable lines when stderr is a terminal, else JSON lines)
  NO_COLOR                   set: pretty lines without colour

examples:
  icefloe standalone config/worker-s3-rest.properties connectors/orders-avro-s3-rest.json
  icefloe standalone config/worker-standalone.properties connectors/events-json.json
`;

const DISTRIBUTED = `usage: icefloe distributed WORKER.properties

Runs a worker of a cluster (Kafka's connect-distributed shape; docs/design/cluster.md): every worker with
the same group.id shares the connectors created through the REST API of any of them, their tasks spread
over the workers, and one committer per connector holds a Redis lease. SIGTERM or Ctrl-C (SIGINT) stops it
gracefully: its tasks commit their cycles and leave their groups, its committers run a last round and
release their leases, then it leaves the cluster and the others take over at once.

arguments:
  WORKER.properties          worker settings as for standalone, plus group.id, config.storage.topic,
                             status.storage.topic and icefloe.redis.url (docs/configuration.md)

environment:
  ICEFLOE_LOG_LEVEL, ICEFLOE_LOG_FORMAT, NO_COLOR as for standalone

example:
  icefloe distributed config/worker-distributed.properties
`;

const GENERATE = `usage: icefloe generate [options]

Produces generated order events (a fixed schema: order id, region, status, items, total, ...) to a topic,
registering their schema as <topic>-value when the format needs one. The topic is created if missing.

options:
  --topic NAME               topic to produce to (default orders)
  --count N                  number of events (default 10000)
  --rate N                   events per second, 0 for as fast as possible (default 0)
  --format F                 avro | protobuf (Confluent-framed, schema registered as <topic>-value),
                             json-schema (JsonConverter with schemas.enable=true) | json (schemas.enable=false)
                             (default avro)
  --partitions N             partitions to create the topic with if it does not exist (default 6)
  --only-partitions 0,1      produce only to these partitions, in turn (default: the key, the order id, chooses)
  --seed N                   the same seed produces the same events (default 1)
  --schema-version 1|2       2 adds the optional field channel and widens items.quantity to long (default 1)
${ENDPOINTS}

examples:
  icefloe generate --topic orders --count 100000 --rate 20000 --format avro
  icefloe generate --topic orders-pb --count 1000 --format protobuf --schema-version 2
`;

const PRODUCE = `usage: icefloe produce --topic NAME [options] [--value JSON]...

Produces records to a topic: each --value, or without one each line of stdin (one JSON document per line;
blank lines are skipped). Every record is checked before anything is sent: a line that is not JSON or does
not fit the schema is named with its line number and field, and nothing is produced. A missing topic is
created with --partitions (an existing one is used as it is); a topic that cannot be created fails at once,
naming the topic and the broker.

options:
  --topic NAME               topic to produce to (required)
  --value JSON               a record's value; repeatable (default: read stdin)
  --format F                 json: the JSON text as is (JsonConverter with schemas.enable=false) |
                             avro | protobuf: encoded with --schema, registered as <topic>-value and
                             Confluent-framed (magic byte, schema id), as Confluent's serializers do
                             (default json)
  --schema FILE|TEXT         the Avro schema (.avsc JSON) or the .proto file, as a path or inline text;
                             required for avro and protobuf. Avro values are plain JSON (a union's value
                             unwrapped, bytes as a string of code points 0-255); Protobuf values use the
                             .proto field names (64-bit integers as numbers or strings, bytes as base64)
  --message NAME             protobuf: the message to encode (default: the first one in the file; the
                             file may import google/protobuf/*.proto, not other files)
  --key TEXT                 the key of every record, as a UTF-8 string (default: no key)
  --key-field NAME           the key of each record: this top-level field of its value (a string as is,
                             anything else as its JSON text)
  --partition N              produce to this partition (default: the key chooses; without a key, spread)
  --partitions N             partitions to create a missing topic with (default 1)
${ENDPOINTS}

examples:
  icefloe produce --topic demo --value '{"id": 1, "name": "first"}' --value '{"id": 2, "name": "second"}'
  printf '{"id": 3}\\n{"id": 4}\\n' | icefloe produce --topic demo --key-field id
  icefloe produce --topic demo-avro --format avro --key-field id \\
    --schema '{"type": "record", "name": "Demo", "fields": [{"name": "id", "type": "long"}]}' --value '{"id": 5}'
  icefloe produce --topic demo-pb --format protobuf --schema demo.proto --value '{"id": 6}'
`;

const CONSUME = `usage: icefloe consume --topic NAME [options]

Prints a topic's records as JSON lines: partition, offset, timestamp, key, value, and the value's format.
Confluent-framed Avro and Protobuf values are decoded with their schema from the registry; other values
are printed as JSON when they are JSON, else as a UTF-8 string, else as hex. It reads by assignment, with
no consumer group: it never commits offsets and never disturbs a connector. Committed records only
(read_committed). Stops at --max-messages, after --timeout-ms without a new record, or on Ctrl-C.

options:
  --topic NAME               topic to read (required; it must exist)
  --from-beginning           start at each partition's first record (default: only records produced
                             after it started)
  --max-messages N           stop after N records (default: no limit)
  --timeout-ms N             stop after N ms without a new record (default: wait until Ctrl-C)
  --partition N              read only this partition (default: all)
${ENDPOINTS}

examples:
  icefloe consume --topic demo --from-beginning --max-messages 10
  icefloe consume --topic orders --from-beginning --max-messages 3 --timeout-ms 10000
`;

const POSITIONS = `usage: icefloe positions WORKER.properties CONNECTOR.json --table NS.TABLE [--reapply | --adopt [--holds-group-offsets]]

Prints, as JSON, a table's control positions (stored in its snapshots) and the connector's, read only.
After a rollback or branch reset stopped the table (positions-rolled-back): --reapply applies the
announcements it lost again from its current positions; --adopt keeps the table as it is and moves the
positions to it (docs/sink.md, "Control positions and tables that move backwards").

options:
  --table NS.TABLE           the table (required)
  --reapply                  re-apply what the table lost, from its current positions
  --adopt                    keep the table as it is and record its positions as the connector's; on a
                             table written by someone else (positions-unseeded) this seeds them
  --holds-group-offsets      with --adopt: the table already holds every record below the connector's
                             consumer group offsets (written by another Connect sink under that group),
                             so the offsets can never move back into them (docs/operations.md)

example:
  icefloe positions config/worker-s3-rest.properties connectors/orders-avro-s3-rest.json --table sales.orders
`;

const REPLAY = `usage: icefloe replay WORKER.properties CONNECTOR.json --table NS.TABLE --snapshot ID

The replay runbook as one operation (docs/operations.md, "Replay a table from a snapshot"), for a connector that
is stopped (no worker runs it): rolls the table's commit branch back to snapshot ID and moves the
connector's consumer group offsets back to just after the source records that snapshot holds, so that the
next start delivers the removed records again, once. Prints what it did as JSON. Refuses, changing nothing,
when another table of the connector holds those records too, when they are no longer in Kafka, or while
the committer has announcements left to apply.

options:
  --table NS.TABLE           the table (required)
  --snapshot ID              the snapshot to roll back to, from the table's history (required)

example:
  icefloe replay config/worker-s3-rest.properties connectors/orders-avro-s3-rest.json --table sales.orders --snapshot 4012931337443351000
`;

const DEAD_LETTERS = `usage: icefloe dead-letters replay WORKER.properties CONNECTOR.json [--to-topic TOPIC] [--dry-run]

Puts the records of the connector's dead-letter topic (errors.deadletterqueue.topic.name) back on the
topics they were read from, once their cause is fixed (a schema registered, the table altered, the
configuration changed), so the running connector reads them again; those that still fail go to the
dead-letter queue again. Replays what the topic holds when it starts, exactly once: its progress is the
consumer group icefloe-dlq-replay-<connector>, committed in the transaction that produces the records,
so a replay cut short and run again goes on where it stopped. Each record keeps its key, value, timestamp
and headers, without the dead-letter context headers. Prints what it did as JSON (docs/errors.md).

options:
  --to-topic TOPIC           replay every record to this topic (one the connector consumes) instead of
                             the one its __connect.errors.topic header names (needed when
                             errors.deadletterqueue.context.headers.enable was off)
  --dry-run                  count what would be replayed, per topic; produce and commit nothing

example:
  icefloe dead-letters replay config/worker-s3-rest.properties connectors/orders-avro-s3-rest.json --dry-run
`;

const VERSION = `usage: icefloe version

Prints Icefloe's version and the Node runtime it runs on (also: icefloe --version).

example:
  icefloe version
`;

const HELP = `usage: icefloe help [COMMAND]

Prints the list of commands, or COMMAND's own help (the same as icefloe COMMAND --help).

example:
  icefloe help produce
`;

/** Each command's own help, by command name. */
export const COMMAND_HELP: Readonly<Record<string, string>> = {
  standalone: STANDALONE,
  distributed: DISTRIBUTED,
  generate: GENERATE,
  produce: PRODUCE,
  consume: CONSUME,
  positions: POSITIONS,
  replay: REPLAY,
  'dead-letters': DEAD_LETTERS,
  version: VERSION,
  help: HELP,
};

/** True when the arguments ask for help (`--help` or `-h` anywhere). */
export function wantsHelp(args: readonly string[]): boolean {
  return args.includes('--help') || args.includes('-h');
}
