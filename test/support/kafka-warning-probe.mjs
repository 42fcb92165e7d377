// Run by test/integration/node-warnings.int.spec.ts under a pinned Node
// (scripts/node-versions.sh): plain JavaScript, so no loader is needed.
// An admin, a producer and a group consumer do one round trip on the real
// broker; every process warning is printed as a JSON line on stdout, then the
// last line is {"received": <messages consumed>}.
//
//   node kafka-warning-probe.mjs <mufold|kafkajs> <brokers> <topic> <group>
//
// mufold: clients from mufold's createKafka (dist/), which carry its kafkajs
// patches; kafkajs: bare kafkajs clients, the control.
const [mode, brokers, topic, groupId] = process.argv.slice(2);
process.on("warning", (w) => console.log(JSON.stringify({ warning: w.name, message: w.message })));

let kafka;
if (mode === "mufold") {
  const { createKafka } = await import("../../dist/src/adapters/kafka/client.js");
  kafka = createKafka({ brokers: brokers.split(","), clientId: "mufold-warning-probe" });
} else if (mode === "kafkajs") {
  const { default: kafkajs } = await import("kafkajs");
  kafka = new kafkajs.Kafka({ brokers: brokers.split(","), clientId: "kafkajs-warning-probe", logLevel: kafkajs.logLevel.NOTHING });
} else {
  throw new Error(`unknown mode ${mode}`);
}

const admin = kafka.admin();
await admin.connect();
// kafkajs's own waitForLeaders gives up on a KRaft broker whose metadata still lags: mufold's wait, for both.
const { awaitTopicLeaders } = await import("../../dist/src/adapters/kafka/topics.js");
await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: false });
await awaitTopicLeaders(admin, [{ topic, partitions: 1 }]);
const producer = kafka.producer();
await producer.connect();
await producer.send({ topic, messages: [{ key: "k", value: "probe" }] });

const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
await consumer.connect();
await consumer.subscribe({ topic, fromBeginning: true });
let received = 0;
await new Promise((resolve, reject) => {
  consumer.on(consumer.events.CRASH, (e) => reject(e.payload.error));
  void consumer.run({
    eachMessage: async () => {
      received++;
      resolve();
    },
  });
});
await consumer.disconnect();
await producer.disconnect();
await admin.deleteTopics({ topics: [topic] });
await admin.disconnect();
// Warnings are emitted on a later tick: let them arrive before the last line.
await new Promise((resolve) => setImmediate(resolve));
console.log(JSON.stringify({ received }));
