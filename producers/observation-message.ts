/** The Kafka message of an observation; the record format lives in src/client/producer.ts (one place). */
export { observationRecord as observationMessage } from "../src/client/producer.js";
