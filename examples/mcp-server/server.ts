/**
 * An MCP server (the official `@modelcontextprotocol/sdk`) protected by agent-auth through the
 * website kit (`@agent-auth/website/mcp`): one tool, `whoami`, that answers which agent called it.
 * MCP clients discover agent-auth from its 401 and its RFC 9728 metadata; no client is registered
 * for it, only the resource.
 *
 * Run it:  agent-auth resources add http://localhost:8090/mcp --name "Example MCP server"
 *          ISSUER=http://localhost:3000 PORT=8090 npm run example:mcp-server
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { type AuthInfo, protectedResource } from '@agent-auth/website/mcp';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

export interface McpExampleOptions {
  /** agent-auth's issuer URL. */
  issuer: string;
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
  /** The resource identifier as registered at agent-auth; default this server's `/mcp` URL. */
  resource?: string;
  /** The scopes the resource accepts (default `email`: the tool can tell the owner's email). */
  scopes?: string[];
  /** Where agent-auth's keys are, when not at the issuer's `/.well-known/jwks.json`. */
  jwksUri?: string;
}

export interface RunningMcpExample {
  /** The MCP endpoint, which is also the resource identifier unless given. */
  url: string;
  close(): Promise<void>;
}

/** The MCP server itself: one tool that reads who signed in from the verified token. */
function exampleServer(): McpServer {
  const server = new McpServer({ name: 'agent-auth example', version: '1.0.0' });
  server.registerTool('whoami', { description: 'Which agent is calling, and its owner’s email when shared' }, (extra) => {
    const who = extra.authInfo?.extra as { agentId: string; email?: string } | undefined;
    const answer = { agent_id: who?.agentId, owner_email: who?.email ?? null, client_id: extra.authInfo?.clientId };
    return { content: [{ type: 'text', text: JSON.stringify(answer) }] };
  });
  return server;
}

/** Answers one MCP request (stateless: a server and a transport per request, the SDK's shape without sessions). */
async function serveMcp(req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse) {
  const server = exampleServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on('close', () => void Promise.all([transport.close(), server.close()]));
  await server.connect(transport);
  await transport.handleRequest(req, res);
}

export async function startMcpExample(options: McpExampleOptions): Promise<RunningMcpExample> {
  const host = options.host ?? '127.0.0.1';
  const http = createServer();
  await new Promise<void>((resolve) => http.listen(options.port ?? 0, host, resolve));
  const url = `http://${host}:${(http.address() as AddressInfo).port}/mcp`;
  // The resource identifier names the port, known only now: requests are taken from here on.
  const guard = protectedResource({
    issuer: options.issuer,
    resource: options.resource ?? url,
    scopes: options.scopes ?? ['email'],
    jwksUri: options.jwksUri,
  });
  const requireToken = guard.middleware();
  http.on('request', (req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path !== '/mcp' && path !== guard.metadataPath) return void res.writeHead(404).end();
    // The kit serves the metadata and answers refusals; past it, req.auth holds the verified token.
    requireToken(req, res, () => {
      serveMcp(req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
  });
  return { url, close: () => new Promise((resolve) => http.close(() => resolve())) };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { ISSUER, PORT = '8090', RESOURCE } = process.env;
  if (!ISSUER) {
    console.error('set ISSUER (agent-auth’s URL)');
    process.exit(1);
  }
  const mcp = await startMcpExample({ issuer: ISSUER, port: Number(PORT), host: 'localhost', resource: RESOURCE });
  console.log(`example MCP server at ${mcp.url}; register it: agent-auth resources add ${RESOURCE ?? mcp.url} --name "Example MCP server"`);
}
