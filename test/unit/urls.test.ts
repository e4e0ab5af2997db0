// How a URL is shown in logs and messages: never its user name, password, query or fragment.
import { describe, expect, it } from 'vitest';
import { urlForLog } from '../../src/support/urls.ts';

describe('urlForLog', () => {
  it('keeps scheme, host and path; drops credentials, query and fragment', () => {
    expect(urlForLog('https://user:pass@api.example.com:8443/v1/api?sig=abc#frag')).toBe('https://api.example.com:8443/v1/api');
    expect(urlForLog('http://127.0.0.1:4010')).toBe('http://127.0.0.1:4010');
    expect(urlForLog('https://api.wiseapp.live/')).toBe('https://api.wiseapp.live');
    expect(urlForLog('http://[::1]:8080/x')).toBe('http://[::1]:8080/x');
    expect(urlForLog('not a url')).toBe('<unparseable url>');
  });
});
