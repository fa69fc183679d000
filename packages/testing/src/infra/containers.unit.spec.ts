import { afterEach, describe, expect, it, vi } from 'vitest';

/** The engine source order of design §11: containers only when a runtime really answers. */
describe('container runtime detection', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
    vi.doUnmock('testcontainers');
    vi.resetModules();
  });

  it('answers false when the configured Docker host does not answer, so the launcher is used', async () => {
    vi.stubEnv('DOCKER_HOST', 'unix:///nonexistent/docker.sock');
    const { containerRuntimeAnswers } = await import('./containers.ts');
    expect(await containerRuntimeAnswers()).toBe(false);
  });

  it('answers true when a runtime answers, and false with GM_CONTAINERS=0 without even asking', async () => {
    const probe = vi.fn(async () => ({}));
    vi.doMock('testcontainers', () => ({ getContainerRuntimeClient: probe }));
    const { containerRuntimeAnswers } = await import('./containers.ts');
    expect(await containerRuntimeAnswers()).toBe(true);
    vi.stubEnv('GM_CONTAINERS', '0');
    expect(await containerRuntimeAnswers()).toBe(false);
    expect(probe).toHaveBeenCalledTimes(1);
  });
});
