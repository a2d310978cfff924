#!/usr/bin/env bash
# /opt/kafka/bin/<tool>.sh of the stand-in: the official scripts' class and JVM options
# (KAFKA_HEAP_OPTS, KAFKA_OPTS as kafka-run-class.sh reads them); tools start with the client
# compiler only (they run for a second: the healthcheck every 10 s).
set -euo pipefail
tool=$(basename "$0" .sh)
libs=/opt/kafka/tools-libs
heap=${KAFKA_HEAP_OPTS:--Xmx256M}
jvm=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto)
case $tool in
kafka-configs) class=org.apache.kafka.tools.ConfigCommand ;;
kafka-broker-api-versions) class=org.apache.kafka.tools.BrokerApiVersionsCommand ;;
kafka-console-consumer) class=org.apache.kafka.tools.consumer.ConsoleConsumer ;;
kafka-console-producer) class=org.apache.kafka.tools.ConsoleProducer ;;
kafka-topics) class=org.apache.kafka.tools.TopicCommand ;;
kafka-storage) class=kafka.tools.StorageTool libs=/opt/kafka/libs ;;
kafka-server-start) class=kafka.Kafka libs=/opt/kafka/libs heap=${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G} jvm=(-XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Dkafka.root.level=INFO) ;;
*) echo "stand-in: no $tool" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086 # the *_OPTS are lists of options, split on blanks
exec java $heap "${jvm[@]}" ${KAFKA_OPTS:-} -Djava.awt.headless=true -Dlog4j2.configurationFile=/etc/kafka/docker/log4j2.properties -cp "$libs/*" "$class" "$@"
