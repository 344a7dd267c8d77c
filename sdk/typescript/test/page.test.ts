import { describe, expect, it } from 'vitest';
import { findRequestId, readRequestId, TimeoutError } from '../src/index.js';

describe('findRequestId', () => {
  it('reads the meta tag, whatever the attribute order and quoting', () => {
    expect(findRequestId('<head><meta name="request-id" content="req_abc"></head>')).toBe('req_abc');
    expect(findRequestId("<META content='req_abc' NAME='request-id' />")).toBe('req_abc');
    expect(findRequestId('<meta name=request-id content=req_abc>')).toBe('req_abc');
  });

  it('decodes HTML entities in the meta tag', () => {
    expect(findRequestId('<meta name="request-id" content="a&amp;b&#39;c&#x3c;">')).toBe("a&b'c<");
  });

  it('skips other meta tags', () => {
    expect(findRequestId('<meta name="viewport" content="width=1"><meta name="request-id" content="r1">')).toBe('r1');
  });

  it('falls back to window.authRequest', () => {
    expect(findRequestId('<script>window.authRequest = {"request_id":"req_\\u003cx"};</script>')).toBe('req_<x');
  });

  it('finds nothing on other pages', () => {
    expect(findRequestId('<html><meta name="description" content="shop"></html>')).toBeUndefined();
    expect(findRequestId('<script>window.authRequest = {broken};</script>')).toBeUndefined();
    expect(findRequestId('<script>window.authRequest = {"request_id":""};</script>')).toBeUndefined();
  });
});

describe('readRequestId', () => {
  const html = '<meta name="request-id" content="req_page">';

  it('reads a page through content() when it has no evaluate()', async () => {
    expect(await readRequestId({ content: async () => html })).toBe('req_page');
  });

  it('waits for the page to reach the expected origin', async () => {
    let url = 'http://shop.example/login';
    setTimeout(() => (url = 'http://auth.example/authorize?x=1'), 100);
    const page = { url: () => url, content: async () => html };
    expect(await readRequestId(page, { expectedOrigin: 'http://auth.example', intervalMs: 20 })).toBe('req_page');
  });

  it('never takes an id from a page of another origin', async () => {
    const page = { url: () => 'http://evil.example/authorize', content: async () => html };
    const err = await readRequestId(page, { expectedOrigin: 'http://auth.example', timeoutMs: 200, intervalMs: 20 }).catch((e) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect(err.message).toContain('http://auth.example');
  });

  it('retries while evaluate() fails during a navigation', async () => {
    let calls = 0;
    const page = {
      evaluate: async () => {
        calls++;
        if (calls < 3) throw new Error('Execution context was destroyed');
        return 'req_eval';
      },
    };
    expect(await readRequestId(page, { intervalMs: 10 })).toBe('req_eval');
    expect(calls).toBe(3);
  });

  it('refuses an object that is not a page', async () => {
    await expect(readRequestId({})).rejects.toThrow(TypeError);
  });
});
