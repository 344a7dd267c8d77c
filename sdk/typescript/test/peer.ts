import { createServer, type IncomingMessage } from 'node:http';

/** What a scripted peer answers: a JSON body (200), or `reply(status, body, headers)`. */
export type Answer = object | Reply;

class Reply {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string>,
  ) {}
}

/** An answer with a status and headers; a string body is sent as it is, anything else as JSON. */
export const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => new Reply(status, body, headers);

export interface PeerRequest {
  url: string;
  body: unknown;
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString();
  return text ? JSON.parse(text) : undefined;
}

/**
 * A stand-in agent-auth server on node:http whose answers a test scripts with `answer(n, request)`
 * (n counts the calls from 1), recording each call.
 */
export async function startPeer(answer: () => (n: number, request: PeerRequest) => Answer | Promise<Answer>) {
  const hits: PeerRequest[] = [];
  const server = createServer(async (req, res) => {
    const request = { url: req.url ?? '/', body: await readJson(req) };
    hits.push(request);
    const result = await answer()(hits.length, request);
    const { status, body, headers } = result instanceof Reply ? result : reply(200, result);
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json', ...headers }).end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
