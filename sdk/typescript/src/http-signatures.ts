/**
 * HTTP Message Signatures (RFC 9421) as Web Bot Auth uses them (docs/protocol.md in the agent-auth
 * repository, "Signed agent requests"): the signature base, the `Signature-Input` and `Signature`
 * fields, and the few Structured Field (RFC 8941) forms they are written in. The one implementation
 * the agent SDK signs with, the website kit verifies with and the server signs its directory with.
 * Imports nothing.
 */

/** The names Web Bot Auth fixes. */
export const WEB_BOT_AUTH = {
  /** The `tag` of an agent's request signature. */
  tag: 'web-bot-auth',
  /** The `tag` of a key directory's response signature. */
  directoryTag: 'http-message-signatures-directory',
  directoryPath: '/.well-known/http-message-signatures-directory',
  directoryMediaType: 'application/http-message-signatures-directory+json',
  /** The request header naming where the signer's keys are: the issuer's origin, as an sf-string. */
  signatureAgentHeader: 'signature-agent',
  /** Where a website asks who holds a key (followed by the URL-encoded kid). */
  lookupPath: '/api/agents/by-signing-key/',
  /** How long an agent's signature is valid by default. */
  defaultExpiresInSeconds: 300,
  /** Ed25519 in the HTTP Signature Algorithms registry (RFC 9421 §6.2.2). */
  algorithm: 'ed25519',
} as const;

/** A covered component: a derived one (`@authority`) or a header name, lower case; `req` takes it from the request of a response. */
export interface Component {
  name: string;
  req?: boolean;
}

/** Signature parameters (RFC 9421 §2.3): integers or strings. */
export type SignatureParams = Record<string, string | number | boolean>;

/** A message as far as a signature base needs it: an absolute URL, a method (requests), header lookup. */
export interface MessageParts {
  method?: string;
  url: string;
  header(name: string): string | undefined;
}

/** RFC 9421 §2.2.3: the URL's host, lower case, with the port only when it is not the scheme's default. */
export const authorityOf = (url: URL) => url.host.toLowerCase();

const quote = (value: string) => {
  // sf-string (RFC 8941 §3.3.3): printable ASCII, with \ and " escaped.
  if (!/^[\x20-\x7e]*$/.test(value)) throw new TypeError('a signature parameter must be printable ASCII');
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
};

const serializeParam = ([name, value]: [string, string | number | boolean]) =>
  value === true ? `;${name}` : `;${name}=${typeof value === 'number' ? Math.trunc(value) : quote(String(value))}`;

/** The inner list of `Signature-Input` for one signature: `("@authority" "signature-agent");created=…;…`. */
export function serializeSignatureInput(components: Component[], params: SignatureParams): string {
  const list = components.map((c) => `${quote(c.name)}${c.req ? ';req' : ''}`).join(' ');
  return `(${list})${Object.entries(params).map(serializeParam).join('')}`;
}

/** The value of one component, or undefined when the message has none (a missing header). */
function componentValue(message: MessageParts, component: Component): string | undefined {
  const url = new URL(message.url);
  switch (component.name) {
    case '@authority':
      return authorityOf(url);
    case '@method':
      return message.method?.toUpperCase();
    case '@scheme':
      return url.protocol.slice(0, -1);
    case '@target-uri':
      return url.href;
    case '@path':
      return url.pathname;
    case '@query':
      return url.search || '?';
    default:
      if (component.name.startsWith('@')) return undefined;
      // RFC 9421 §2.1: the field's values, trimmed, obsolete line folding replaced by a space.
      return message
        .header(component.name)
        ?.split(/\r?\n/)
        .map((line) => line.trim())
        .join(' ');
  }
}

/**
 * The signature base (RFC 9421 §2.5) over `components` of `message` (for a component with `req`,
 * of `request`); undefined when a covered component is missing from the message.
 */
export function signatureBase(
  message: MessageParts,
  components: Component[],
  signatureInput: string,
  request: MessageParts = message,
): string | undefined {
  const lines: string[] = [];
  for (const component of components) {
    const value = componentValue(component.req ? request : message, component);
    if (value === undefined) return undefined;
    lines.push(`${quote(component.name)}${component.req ? ';req' : ''}: ${value}`);
  }
  lines.push(`"@signature-params": ${signatureInput}`);
  return lines.join('\n');
}

/** A parsed signature: its label, covered components, parameters, and the inner list as sent (what the base ends with). */
export interface ParsedSignatureInput {
  label: string;
  components: Component[];
  params: SignatureParams;
  input: string;
}

/** A small reader of the RFC 8941 forms used here; every method throws SyntaxError on anything else. */
class FieldReader {
  private at = 0;
  constructor(private readonly text: string) {}
  get done() {
    return this.at >= this.text.length;
  }
  private fail(): never {
    throw new SyntaxError(`malformed structured field at ${this.at}`);
  }
  skip(pattern: RegExp) {
    while (!this.done && pattern.test(this.text[this.at])) this.at++;
  }
  expect(char: string) {
    if (this.text[this.at] !== char) this.fail();
    this.at++;
  }
  peek(char: string) {
    return this.text[this.at] === char;
  }
  position() {
    return this.at;
  }
  slice(from: number) {
    return this.text.slice(from, this.at);
  }
  key(): string {
    const match = /^[a-z*][a-z0-9_\-.*]*/.exec(this.text.slice(this.at));
    if (!match) this.fail();
    this.at += match[0].length;
    return match[0];
  }
  string(): string {
    this.expect('"');
    let value = '';
    for (;;) {
      const char = this.text[this.at++];
      if (char === undefined) this.fail();
      if (char === '"') return value;
      if (char === '\\') {
        const escaped = this.text[this.at++];
        if (escaped !== '"' && escaped !== '\\') this.fail();
        value += escaped;
      } else if (char < ' ' || char > '~') this.fail();
      else value += char;
    }
  }
  bareItem(): string | number | boolean {
    if (this.peek('"')) return this.string();
    if (this.peek('?')) {
      this.at++;
      const bit = this.text[this.at++];
      if (bit !== '0' && bit !== '1') this.fail();
      return bit === '1';
    }
    const match = /^(-?\d{1,15})(?![\d.])|^[A-Za-z*][!#$%&'*+\-.^_`|~\w:/]*/.exec(this.text.slice(this.at));
    if (!match) this.fail();
    this.at += match[0].length;
    return match[1] !== undefined ? Number(match[1]) : match[0];
  }
  byteSequence(): Uint8Array {
    this.expect(':');
    const match = /^[A-Za-z0-9+/=]*/.exec(this.text.slice(this.at))!;
    this.at += match[0].length;
    this.expect(':');
    return Uint8Array.from(atob(match[0]), (c) => c.charCodeAt(0));
  }
  params(): SignatureParams {
    const params: SignatureParams = {};
    while (this.peek(';')) {
      this.at++;
      this.skip(/ /);
      const name = this.key();
      if (this.peek('=')) {
        this.at++;
        params[name] = this.bareItem();
      } else params[name] = true;
    }
    return params;
  }
  /** Dictionary members (RFC 8941 §4.2.2), each read by `member`. */
  dictionary<T>(member: (reader: FieldReader) => T): Map<string, T> {
    const entries = new Map<string, T>();
    this.skip(/ /);
    while (!this.done) {
      const key = this.key();
      this.expect('=');
      entries.set(key, member(this));
      this.skip(/[ \t]/);
      if (this.done) break;
      this.expect(',');
      this.skip(/[ \t]/);
      if (this.done) this.fail();
    }
    return entries;
  }
}

/** Every signature a `Signature-Input` field declares (RFC 9421 §4.1); throws SyntaxError when it is malformed. */
export function parseSignatureInput(field: string): ParsedSignatureInput[] {
  const signatures = new FieldReader(field).dictionary((reader) => {
    const start = reader.position();
    reader.expect('(');
    const components: Component[] = [];
    reader.skip(/ /);
    while (!reader.peek(')')) {
      const name = reader.string();
      const params = reader.params();
      components.push(params.req === true ? { name, req: true } : { name });
      reader.skip(/ /);
    }
    reader.expect(')');
    const params = reader.params();
    return { components, params, input: reader.slice(start) };
  });
  return [...signatures].map(([label, signature]) => ({ label, ...signature }));
}

/** The signatures of a `Signature` field by label (RFC 9421 §4.2); throws SyntaxError when it is malformed. */
export const parseSignature = (field: string): Map<string, Uint8Array> => new FieldReader(field).dictionary((reader) => reader.byteSequence());

/** An sf-string field's value (`Signature-Agent: "https://…"`); throws SyntaxError otherwise. */
export function parseStringField(field: string): string {
  const reader = new FieldReader(field.trim());
  const value = reader.string();
  if (!reader.done) throw new SyntaxError('a single string was expected');
  return value;
}

/** An sf-string, as `Signature-Agent` carries the issuer's origin. */
export const stringField = quote;

/** A byte sequence field value: `:base64:`. */
export const byteSequence = (bytes: Uint8Array) => `:${btoa(String.fromCharCode(...bytes))}:`;

/** RFC 9530 `Content-Digest` of a body, with SHA-256. */
export async function contentDigest(body: Uint8Array<ArrayBuffer> | string): Promise<string> {
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  return `sha-256=${byteSequence(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)))}`;
}
