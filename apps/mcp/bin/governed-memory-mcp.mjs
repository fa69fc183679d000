#!/usr/bin/env node
// The MCP server's entry for agents' configs: `node /path/to/repo/apps/mcp/bin/governed-memory-mcp.mjs`
// from any working directory. It loads the TypeScript sources through tsx, resolved from here
// (a `node --import tsx` would resolve tsx from the agent's working directory instead).
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
