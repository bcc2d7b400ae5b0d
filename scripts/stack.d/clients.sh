# Real Kafka Connect REST clients from package registries, for the end-to-end client tests
# (test/clients/, test/e2e/rest-client.test.ts). Install-only: no process.
#
# sourcelab: org.sourcelab:kafka-connect-client from Maven Central, the Java client library AKHQ uses
# for its Connect pages (create, update config, pause, resume, stop, restart, delete, status). Its jars
# (the client plus Apache HttpClient, Jackson and SLF4J) are copied into
# $ICEFLOE_CACHE/connect-client-sourcelab-<version>/lib; the driver test/clients/sourcelab/Driver.java
# runs from source on Java 17 (the JDK's single-file launcher), so nothing compiled is cached.
#
# The Go client of the Terraform provider (ricardo-ch/go-kafka-connect) and the provider itself are
# refused by the Go module proxy here, and kcctl is published to no registry this machine reaches.
#
# A test that runs before `scripts/stack up` installed this calls test/clients/install, which runs the
# same function.

clients_sourcelab_dir() { echo "$ICEFLOE_CACHE/connect-client-sourcelab-$CONNECT_CLIENT_SOURCELAB_VERSION"; }

clients_what() { echo "installing the Connect REST client AKHQ uses (Maven Central org.sourcelab:kafka-connect-client $CONNECT_CLIENT_SOURCELAB_VERSION)"; }
clients_installed() { is_done "$(clients_sourcelab_dir)"; }

clients_install() {
  maven_copy_deps "$(clients_sourcelab_dir)" \
    "$(maven_dep org.sourcelab kafka-connect-client "$CONNECT_CLIENT_SOURCELAB_VERSION")" \
    || die "copying org.sourcelab:kafka-connect-client $CONNECT_CLIENT_SOURCELAB_VERSION and its dependencies from Maven Central failed"
}

clients_env() { echo "ICEFLOE_CONNECT_CLIENT_SOURCELAB_LIB=$(clients_sourcelab_dir)/lib"; }
