// One POST of one message. Webhooks have connections of their own (an undici Agent), so a slow or
// dead endpoint never holds a socket the remote classroom calls need. Redirects are not followed:
// a 3xx is an answer like any other.
import { Agent, request } from 'undici';

export interface PostResult {
  /** The HTTP status, or undefined when no answer came (see `error`). */
  status: number | undefined;
  retryAfter?: string | undefined;
  /** Why no answer came: `timeout after 5000 ms`, `connection refused (ECONNREFUSED)`… (never the URL). */
  error?: string;
}

export interface WebhookPoster {
  post(url: string, body: string, headers: Record<string, string>): Promise<PostResult>;
  close(): Promise<void>;
}

/** The answer's body is read (so the connection can be reused) up to this much, and dropped. */
const BODY_LIMIT = 64 * 1024;

export function createWebhookPoster(options: { timeoutMs: number; connections: number }): WebhookPoster {
  const { timeoutMs } = options;
  const agent = new Agent({ connections: options.connections, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connect: { timeout: timeoutMs } });
  return {
    async post(url, body, headers) {
      try {
        // One deadline for connecting, headers and body alike.
        const answer = await request(url, { method: 'POST', body, headers, dispatcher: agent, signal: AbortSignal.timeout(timeoutMs) });
        await answer.body.dump({ limit: BODY_LIMIT }).catch(() => {});
        const retryAfter = answer.headers['retry-after'];
        return { status: answer.statusCode, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter };
      } catch (error) {
        return { status: undefined, error: describeFailure(error, timeoutMs) };
      }
    },
    // Called once the dispatcher's grace is over: a request still out is abandoned (its message is
    // sent again when its claim ends), not waited for up to WEBHOOK_TIMEOUT.
    close: () => agent.destroy(),
  };
}

function describeFailure(error: unknown, timeoutMs: number): string {
  const e = error as { name?: string; code?: string; cause?: { code?: string } };
  const code = e.code ?? e.cause?.code;
  if (
    e.name === 'TimeoutError' ||
    e.name === 'AbortError' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT'
  ) {
    return `timeout after ${timeoutMs} ms`;
  }
  if (code === 'ECONNREFUSED') return 'connection refused (ECONNREFUSED)';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return `connection closed before an answer (${code})`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `host not found (${code})`;
  return `request failed (${code ?? e.name ?? 'unknown error'})`;
}
