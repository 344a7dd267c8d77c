/**
 * /userinfo with DPoP against /userinfo with a bearer token, in one run, in one process: the server's
 * CPU time per request (process.cpuUsage around fastify.inject, the same harness for both). Proofs are
 * signed before the clock starts, so the client's signing is not counted. The store's own CPU (the
 * PostgreSQL backend that records each proof) is not in this figure: see bench/results/*-dpop.md.
 *
 *   npx tsx bench/dpop-userinfo.ts [requests]                                      # PGlite
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/dpop-userinfo.ts [requests]
 */
import { codeForClient, issueTokens, postForm } from '../test/helpers/codes.js';
import { storeName } from '../test/helpers/database.js';
import { dpopKey, dpopProof } from '../test/helpers/dpop.js';
import { ISSUER, startTestServer } from '../test/helpers/server.js';

const requests = Number(process.argv[2] ?? 3000);
const rounds = 3;
const server = await startTestServer();
try {
  const key = await dpopKey('ES256');
  const bearer = (await issueTokens(server)).access_token;
  const client = await server.createClient();
  const { code, verifier } = await codeForClient(server, client);
  const form = { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: client.redirect_uris[0], ...client };
  const bound = (await postForm(server, '/token', form, { dpop: await dpopProof(key) })).json().access_token as string;

  async function measure(headers: () => Record<string, string>[]): Promise<number> {
    const all = headers();
    const start = process.cpuUsage();
    for (const h of all) {
      const res = await server.app.inject({ url: '/userinfo', headers: h });
      if (res.statusCode !== 200) throw new Error(`userinfo: ${res.statusCode} ${res.body}`);
    }
    const used = process.cpuUsage(start);
    return (used.user + used.system) / all.length;
  }
  const proofs = async () =>
    Promise.all(Array.from({ length: requests }, () => dpopProof(key, { htm: 'GET', htu: `${ISSUER}/userinfo`, accessToken: bound })));

  // Warm both paths first (JIT, caches), then alternate rounds so that drift hits both alike.
  await measure(() => Array.from({ length: 500 }, () => ({ authorization: `Bearer ${bearer}` })));
  const warm = await proofs();
  await measure(() => warm.slice(0, 500).map((p) => ({ authorization: `DPoP ${bound}`, dpop: p })));
  const results: { bearer: number; dpop: number }[] = [];
  for (let round = 0; round < rounds; round++) {
    const b = await measure(() => Array.from({ length: requests }, () => ({ authorization: `Bearer ${bearer}` })));
    // Signed just before use: a proof is good for 60 seconds.
    const ready = await proofs();
    const d = await measure(() => ready.map((p) => ({ authorization: `DPoP ${bound}`, dpop: p })));
    results.push({ bearer: b, dpop: d });
  }
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const b = median(results.map((r) => r.bearer));
  const d = median(results.map((r) => r.dpop));
  console.log(
    JSON.stringify({ store: storeName, requests, rounds, results, medianMicrosecondsPerRequest: { bearer: b, dpop: d }, ratio: d / b }, null, 2),
  );
} finally {
  await server.close();
}
