# The Apache Iceberg REST catalog test fixture (org.apache.iceberg.rest.RESTCatalogServer, the server of
# the apache/iceberg-rest-fixture image) on port $CATALOG_PORT, Java 17. Its shaded jar is not
# published, so the classpath is built from Maven Central: the iceberg-open-api test fixtures, the
# RESTCatalogAdapter/Servlet from iceberg-core's test jar, S3FileIO (iceberg-aws + its AWS bundle),
# Jetty 12 ee10 (Iceberg 1.11; 1.10 used Jetty 11), Hadoop's Configuration (shaded client pair) and
# the JDBC drivers. Behind it: a JdbcCatalog on PostgreSQL (catalog name $CATALOG_NAME, the
# iceberg_tables / iceberg_namespace_properties tables, which PyIceberg's SqlCatalog can read too) and
# S3FileIO on the moto store. A test fixture: no auth, and it binds all interfaces, not only loopback.
# loadTable responses carry no s3.endpoint: every client configures its own S3 settings. A conflicting
# commit gets 409. While S3 is down, loadTable and commits take ~2 min to fail with a 500 (Iceberg's
# metadata refresh retries 20 times, hard-coded).
catalog_timeout=60

catalog_home() { echo "$ICEFLOE_CACHE/iceberg-rest-$ICEBERG_VERSION"; }
catalog_url() { echo "http://127.0.0.1:$CATALOG_PORT"; }

catalog_what() { echo "installing the Iceberg REST catalog $ICEBERG_VERSION (jars from Maven Central)"; }
catalog_installed() { is_done "$(catalog_home)"; }

catalog_install() {
  local i=org.apache.iceberg
  maven_copy_deps "$(catalog_home)" \
    "$(maven_dep $i iceberg-open-api "$ICEBERG_VERSION" test-fixtures)" \
    "$(maven_dep $i iceberg-core "$ICEBERG_VERSION")" \
    "$(maven_dep $i iceberg-core "$ICEBERG_VERSION" tests)" \
    "$(maven_dep $i iceberg-aws "$ICEBERG_VERSION")" \
    "$(maven_dep $i iceberg-aws-bundle "$ICEBERG_VERSION")" \
    "$(maven_dep org.eclipse.jetty.ee10 jetty-ee10-servlet "$JETTY_VERSION")" \
    "$(maven_dep org.eclipse.jetty.compression jetty-compression-server "$JETTY_VERSION")" \
    "$(maven_dep org.eclipse.jetty.compression jetty-compression-gzip "$JETTY_VERSION")" \
    "$(maven_dep org.apache.hadoop hadoop-client-api "$HADOOP_VERSION")" \
    "$(maven_dep org.apache.hadoop hadoop-client-runtime "$HADOOP_VERSION")" \
    "$(maven_dep org.postgresql postgresql "$POSTGRES_JDBC_VERSION")" \
    "$(maven_dep org.xerial sqlite-jdbc "$SQLITE_JDBC_VERSION")" \
    "$(maven_dep org.slf4j slf4j-simple "$SLF4J_VERSION")"
}

catalog_start() {
  [ -d "$(catalog_home)/lib" ] || die "the REST catalog is not installed ($(catalog_home)); run scripts/stack install"
  # The fixture reads its configuration from CATALOG_* variables: strip CATALOG_, `__` -> `-`,
  # `_` -> `.`, lower-case (CATALOG_S3_PATH__STYLE__ACCESS -> s3.path-style-access).
  (
    export CATALOG_REST_PORT="$CATALOG_PORT" \
      CATALOG_CATALOG_NAME="$CATALOG_NAME" \
      CATALOG_CATALOG__IMPL=org.apache.iceberg.jdbc.JdbcCatalog \
      CATALOG_URI="jdbc:postgresql://127.0.0.1:$POSTGRES_PORT/$POSTGRES_DB" \
      CATALOG_JDBC_USER="$POSTGRES_USER" CATALOG_JDBC_PASSWORD="$POSTGRES_PASSWORD" \
      CATALOG_JDBC_SCHEMA__VERSION=V1 \
      CATALOG_WAREHOUSE="s3://$S3_BUCKET/" \
      CATALOG_IO__IMPL=org.apache.iceberg.aws.s3.S3FileIO \
      CATALOG_S3_ENDPOINT="http://127.0.0.1:$S3_PORT" \
      CATALOG_S3_PATH__STYLE__ACCESS=true \
      CATALOG_S3_ACCESS__KEY__ID="$S3_ACCESS_KEY" CATALOG_S3_SECRET__ACCESS__KEY="$S3_SECRET_KEY" \
      CATALOG_CLIENT_REGION="$S3_REGION" \
      AWS_REGION="$S3_REGION"
    # Every CATALOG_* variable becomes a catalog property: drop our own stack.env names.
    unset CATALOG_NAME CATALOG_PORT
    start_bg catalog "$(java17)" -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
      -cp "$(catalog_home)/lib/*" org.apache.iceberg.rest.RESTCatalogServer
  )
}

catalog_ready() { curl -sf -o /dev/null "$(catalog_url)/v1/config"; }

catalog_describe() {
  echo "Iceberg REST catalog fixture $ICEBERG_VERSION on $(catalog_url) (JDBC on PostgreSQL :$POSTGRES_PORT, catalog $CATALOG_NAME, warehouse s3://$S3_BUCKET/)"
}

catalog_env() {
  echo "ICEFLOE_CATALOG_URI=$(catalog_url)"
  echo "ICEFLOE_CATALOG_NAME=$CATALOG_NAME"
  echo "ICEFLOE_CATALOG_WAREHOUSE=s3://$S3_BUCKET/"
}
