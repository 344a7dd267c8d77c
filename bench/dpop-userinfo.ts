/**
 * /userinfo with DPoP against /userinfo with a bearer token, in one run, in one process: the server's
 * CPU time per request (process.cpuUsage around fastify.inject, the same harness for both). Proofs are
 * signed before the clock starts, so the client's signing is not counted. `concurrency` requests are
 * in flight at once (default 50, as `npm run bench` loads the server): the proofs accepted meanwhile
 * are recorded in the store together (src/dpop/proofs.ts). The store's own CPU (the PostgreSQL backend
 * that records them) is not in this figure: see bench/results/*-dpop.md and *-hot-paths.md.
 *
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/dpop-userinfo.ts [requests] [concurrency]
 *
 * PostgreSQL only: the test helpers take PGlite's template database from vitest, which runs no bench.
 */
import { loadavg } from 'node:os';
import { ProofVerifier } from '../src/dpop/proof.js';
import { codeForClient, issueTokens, postForm } from '../test/helpers/codes.js';
import { storeName } from '../test/helpers/database.js';
import { dpopKey, dpopProof } from '../test/helpers/dpop.js';
import { ISSUER, startTestServer } from '../test/helpers/server.js';

const requests = Number(process.argv[2] ?? 3000);
const concurrency = Number(process.argv[3] ?? 50);
const rounds = 5;
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
    let next = 0;
    const worker = async () => {
      while (next < all.length) {
        const res = await server.app.inject({ url: '/userinfo', headers: all[next++] });
        if (res.statusCode !== 200) throw new Error(`userinfo: ${res.statusCode} ${res.body}`);
      }
    };
    const start = process.cpuUsage();
    await Promise.all(Array.from({ length: concurrency }, worker));
    const used = process.cpuUsage(start);
    return (used.user + used.system) / all.length;
  }
  const proofs = async () =>
    Promise.all(Array.from({ length: requests }, () => dpopProof(key, { htm: 'GET', htu: `${ISSUER}/userinfo`, accessToken: bound })));

  // Warm both paths first (JIT, caches), then alternate rounds so that drift hits both alike.
  await measure(() => Array.from({ length: 500 }, () => ({ authorization: `Bearer ${bearer}` })));
  const warm = await proofs();
  await measure(() => warm.slice(0, 500).map((p) => ({ authorization: `DPoP ${bound}`, dpop: p })));
  // The proof's own check (parse, signature, claims) on its own: the floor of what DPoP adds.
  const proofVerifier = new ProofVerifier(10);
  const checkAlone = (ready: string[]) => {
    const start = process.cpuUsage();
    for (const p of ready) proofVerifier.check(p, { method: 'GET', url: `${ISSUER}/userinfo`, accessToken: bound, now: Date.now() / 1000 });
    const used = process.cpuUsage(start);
    return (used.user + used.system) / ready.length;
  };
  const results: { bearer: number; dpop: number; proofCheck: number; ratio: number }[] = [];
  for (let round = 0; round < rounds; round++) {
    // Each first in turn, so that drift hits both alike.
    const bearerRound = () => measure(() => Array.from({ length: requests }, () => ({ authorization: `Bearer ${bearer}` })));
    // Signed just before use: a proof is good for 60 seconds.
    const ready = await proofs();
    const dpopRound = () => measure(() => ready.map((p) => ({ authorization: `DPoP ${bound}`, dpop: p })));
    const [b, d] = round % 2 === 0 ? [await bearerRound(), await dpopRound()] : [await dpopRound(), await bearerRound()].reverse();
    results.push({ bearer: b, dpop: d, proofCheck: checkAlone(await proofs()), ratio: d / b });
  }
  const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)];
  const b = median(results.map((r) => r.bearer));
  const check = median(results.map((r) => r.proofCheck));
  console.log(
    JSON.stringify(
      {
        store: storeName,
        requests,
        concurrency,
        rounds,
        loadAverage: loadavg(),
        results,
        medianMicrosecondsPerRequest: { bearer: b, dpop: median(results.map((r) => r.dpop)), proofCheckAlone: check },
        medianRatio: median(results.map((r) => r.ratio)),
        // What DPoP would cost if the proof's check were all it added.
        floorRatio: (b + check) / b,
      },
      null,
      2,
    ),
  );
} finally {
  await server.close();
}
