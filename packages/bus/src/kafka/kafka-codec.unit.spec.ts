import type { KafkaMessage } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { decodeMessage, encodedBytes } from './kafka-codec.ts';

const record = (value: Buffer): KafkaMessage => ({ key: Buffer.from('k'), value, offset: '7', timestamp: '0', attributes: 0, headers: {} } as KafkaMessage);
const valueOf = (bytes: Buffer) => decodeMessage('memory.ingest', 0, record(bytes)).value;

describe('the Kafka codec reads what a foreign producer sent exactly, or as text to refuse', () => {
  it('decodes JSON as sent', () => {
    expect(valueOf(Buffer.from('{"requestId":"r-1","content":"Café"}'))).toEqual({ requestId: 'r-1', content: 'Café' });
  });

  it('hands over as text, for the schema check to refuse, what JSON.parse would have changed', () => {
    for (const bytes of [
      Buffer.from('{"requestId":"r-1","trust":"untrusted","trust":"trusted"}'),
      Buffer.from('{"requestId":"r-1","content":"Caf\\ud800"}'),
      Buffer.from([...Buffer.from('{"requestId":"r-1","content":"Caf'), 0xc3, 0x28, ...Buffer.from('"}')]),
    ]) expect(typeof valueOf(bytes)).toBe('string');
  });
});

describe('what a batch weighs', () => {
  it('counts the headers with the key and the value, so messages with large headers still fit the broker limit', () => {
    const plain = { topic: 't', key: 'k1', value: '{"a":1}', headers: {} };
    const capability = 'x'.repeat(1_000);
    expect(encodedBytes([plain])).toBe(2 + 7);
    expect(encodedBytes([plain, { ...plain, headers: { 'x-gm-capability': capability } }])).toBe(2 * (2 + 7) + 'x-gm-capability'.length + capability.length);
  });
});
