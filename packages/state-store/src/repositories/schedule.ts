import type { KeyValueStore, KvWrite } from '../port.ts';
import { memberOf, partsOfMember, type KeySpace } from './keys.ts';

export interface ScheduledExpiry {
  tenantId: string;
  subjectId: string;
  recordId: string;
  dueAtMs: number;
}

/** The expiry schedule (§4): a sorted set by due time, like a Redis ZSET. */
export class ExpirySchedule {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}

  private member = (e: Omit<ScheduledExpiry, 'dueAtMs'>) => memberOf(e.tenantId, e.subjectId, e.recordId);

  schedule = (e: ScheduledExpiry) => this.kv.zadd(this.keys.expirySchedule(), e.dueAtMs, this.member(e));
  unschedule = (e: Omit<ScheduledExpiry, 'dueAtMs'>) => this.kv.zrem(this.keys.expirySchedule(), [this.member(e)]);
  scheduleWrite = (e: ScheduledExpiry): KvWrite => ({ op: 'zadd', key: this.keys.expirySchedule(), score: e.dueAtMs, member: this.member(e) });
  unscheduleWrite = (e: Omit<ScheduledExpiry, 'dueAtMs'>): KvWrite => ({ op: 'zrem', key: this.keys.expirySchedule(), members: [this.member(e)] });

  async due(nowMs: number, limit: number): Promise<ScheduledExpiry[]> {
    const rows = await this.kv.zrangeByScore(this.keys.expirySchedule(), 0, nowMs, limit);
    return rows.flatMap(({ member, score }) => {
      const [tenantId, subjectId, recordId] = partsOfMember(member);
      return tenantId && subjectId && recordId ? [{ tenantId, subjectId, recordId, dueAtMs: score }] : [];
    });
  }
}
