/**
 * Which consumed batch a request to Kafka is made for. A handler that calls the bus (reads a
 * partition, produces, asks for end offsets) waits on Kafka just as the subscription's own
 * commits do: a broker that hangs is not a handler that stopped, and must not make the member
 * leave its group (kafka-subscription.ts, checkStalled). In the broker freeze, write-admission's
 * member left as its handler's reads and produces met the frozen leader, and its rejoin (a new
 * generation, every partition's producer fenced again) came on top of the failover
 * (docs/reliability.md "The Kafka client under failover").
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** Runs a step that waits on Kafka, marked as such for the batch in hand. */
export type KafkaWaitMarker = <T>(step: () => Promise<T>) => Promise<T>;

const batchInHand = new AsyncLocalStorage<KafkaWaitMarker>();

/** Runs a batch's handling; the bus's Kafka requests made from it are marked by `marker`. */
export function handlingBatch<T>(marker: KafkaWaitMarker, handle: () => Promise<T>): Promise<T> {
  return batchInHand.run(marker, handle);
}

/** A step that waits on Kafka: marked for the batch in hand, if any. */
export function waitingOnKafka<T>(step: () => Promise<T>): Promise<T> {
  const marker = batchInHand.getStore();
  return marker === undefined ? step() : marker(step);
}
