export { memoryMcpServer, SERVER_INFO, type ToolDefaults } from './tools.ts';
export { capabilityCommand, capabilityFile, sessionServer } from './session.ts';
export { startMcpHttpServer, type HttpOptions, type McpHttpServer } from './http.ts';
export { McpEnv } from './env.ts';
