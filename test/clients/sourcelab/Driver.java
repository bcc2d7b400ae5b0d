// Drives a Kafka Connect REST server with a real client library: org.sourcelab:kafka-connect-client, the
// client AKHQ uses for its Connect pages, from Maven Central (installed by scripts/stack.d/clients.sh).
// Every call goes through the library's own API (KafkaConnectClient methods and its DTOs), never raw
// HTTP, so what this prints is what that library made of the server's answers.
//
// Run from source with the library's jars (Java 17's single-file launcher, so nothing compiled is kept):
//
//   java -cp "$ICEFLOE_CONNECT_CLIENT_SOURCELAB_LIB/*" test/clients/sourcelab/Driver.java http://127.0.0.1:8083
//
// It reads one JSON command a line from stdin and answers each with one JSON line on stdout, so a test can
// interleave client calls with its own checks (produce, wait for data, assert) on one JVM:
//
//   {"op":"create","name":"c1","config":{"connector.class":"...","topics":"t"}}
//   {"op":"get|config|status|tasks|topics|pause|resume|stop|restart|delete","name":"c1"}
//   {"op":"update","name":"c1","config":{...}}          PUT /connectors/c1/config
//   {"op":"version"}  {"op":"list"}  {"op":"expanded"}  {"op":"plugins"}
//
// Answers: {"op":"create","ok":true,"result":<what the library returned, as JSON>} or
// {"op":"create","ok":false,"error":{"type":"InvalidRequestException","message":"...","errorCode":404}}.
// The library's DTOs are written with its own Jackson mapper (snake_case, as Connect's JSON).
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.sourcelab.kafka.connect.apiclient.Configuration;
import org.sourcelab.kafka.connect.apiclient.KafkaConnectClient;
import org.sourcelab.kafka.connect.apiclient.request.JacksonFactory;
import org.sourcelab.kafka.connect.apiclient.request.dto.NewConnectorDefinition;
import org.sourcelab.kafka.connect.apiclient.rest.exceptions.InvalidRequestException;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

public final class Driver {
    private static final ObjectMapper JSON = JacksonFactory.newInstance();

    public static void main(final String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: Driver.java <connect-url>  (commands as JSON lines on stdin)");
            System.exit(2);
        }
        final Configuration configuration = new Configuration(args[0]);
        // The Terraform provider's 10 s is the tightest time-out a common client uses; a server that
        // needs longer for a state change breaks it, so this driver holds it to the same bound.
        configuration.useRequestTimeoutInSeconds(10);
        final KafkaConnectClient client = new KafkaConnectClient(configuration);
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            final JsonNode command = JSON.readTree(line);
            final String op = command.path("op").asText();
            final ObjectNode answer = JSON.createObjectNode();
            answer.put("op", op);
            try {
                answer.put("ok", true);
                answer.set("result", JSON.valueToTree(call(client, op, command)));
            } catch (final InvalidRequestException e) {
                answer.put("ok", false);
                final ObjectNode error = answer.putObject("error");
                error.put("type", e.getClass().getSimpleName());
                error.put("message", e.getMessage());
                error.put("errorCode", e.getErrorCode());
            } catch (final RuntimeException e) {
                // Anything else the library threw: a response it could not parse, a time-out, a refused connection.
                answer.put("ok", false);
                final ObjectNode error = answer.putObject("error");
                error.put("type", e.getClass().getSimpleName());
                error.put("message", String.valueOf(e.getMessage()));
            }
            System.out.println(JSON.writeValueAsString(answer));
            System.out.flush();
        }
    }

    private static Object call(final KafkaConnectClient client, final String op, final JsonNode command) {
        final String name = command.path("name").asText();
        switch (op) {
            case "version": return client.getConnectServerVersion();
            case "list": return client.getConnectors();
            case "expanded": return client.getConnectorsWithAllExpandedMetadata();
            case "plugins": return client.getConnectorPlugins();
            case "create": return client.addConnector(new NewConnectorDefinition(name, config(command)));
            case "get": return client.getConnector(name);
            case "config": return client.getConnectorConfig(name);
            case "update": return client.updateConnectorConfig(name, config(command));
            case "status": return client.getConnectorStatus(name);
            case "tasks": return client.getConnectorTasks(name);
            case "topics": return client.getConnectorTopics(name);
            case "pause": return client.pauseConnector(name);
            case "resume": return client.resumeConnector(name);
            case "stop": return client.stopConnector(name);
            case "restart": return client.restartConnector(name);
            case "delete": return client.deleteConnector(name);
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    // The library takes config values as strings (Map<String, String>), as Connect stores them.
    private static Map<String, String> config(final JsonNode command) {
        final Map<String, String> config = new LinkedHashMap<>();
        final Iterator<Map.Entry<String, JsonNode>> fields = command.path("config").fields();
        while (fields.hasNext()) {
            final Map.Entry<String, JsonNode> field = fields.next();
            config.put(field.getKey(), field.getValue().asText());
        }
        return config;
    }
}
