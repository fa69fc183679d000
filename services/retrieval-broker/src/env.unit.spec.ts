import { describe, expect, it } from 'vitest';
import { brokerEnvShape, brokerSettingsOf } from './env.ts';
import { z } from 'zod';

const settings = (env: Record<string, string>, production: boolean) => brokerSettingsOf(z.object(brokerEnvShape).parse(env), production);

describe('the broker settings', () => {
  it('take the first administrators from configuration only in production, unless MEMORY_ADMIN_BOOTSTRAP says otherwise (design §6.2)', () => {
    expect(settings({}, false).adminBootstrap).toBe('issuer');
    expect(settings({}, true).adminBootstrap).toBe('configured');
    expect(settings({ MEMORY_ADMIN_BOOTSTRAP: 'issuer' }, true).adminBootstrap).toBe('issuer');
    expect(settings({ MEMORY_ADMIN_BOOTSTRAP: 'configured' }, false).adminBootstrap).toBe('configured');
  });
});
