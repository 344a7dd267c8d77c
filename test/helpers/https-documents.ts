import { createServer } from 'node:https';
import { testCertificates } from './tls.js';

export interface DocumentReply {
  status?: number;
  headers?: Record<string, string>;
  body: unknown;
}

/**
 * An https server on 127.0.0.1 that answers each path with what the test set for it (a JSON body, or
 * raw text), and counts the requests each path received.
 */
export async function startDocumentServer() {
  const certs = testCertificates();
  // What the server and its clients need is read: the files can go.
  certs.remove();
  const { ca, key, cert } = certs;
  const replies = new Map<string, DocumentReply>();
  const hits = new Map<string, number>();
  const server = createServer({ key, cert }, (req, res) => {
    const path = req.url ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const reply = replies.get(path);
    if (!reply) {
      res.writeHead(404).end();
      return;
    }
    const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
    res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers }).end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    ca,
    origin,
    /** Serves `reply` at `path`; returns the URL. */
    serve(path: string, reply: DocumentReply): string {
      replies.set(path, reply);
      return `${origin}${path}`;
    },
    hits: (path: string) => hits.get(path) ?? 0,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
