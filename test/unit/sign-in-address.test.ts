// Whom the sign-in throttle counts a failure against: an IPv4 address as it is, an IPv6 address as
// its /64 (a host commonly holds a whole one), an IPv4-mapped IPv6 address as its IPv4 address.
import { describe, expect, it } from 'vitest';
import { countedAs } from '../../src/http/auth-throttle.ts';

describe('countedAs', () => {
  it('counts IPv4 addresses one by one', () => {
    expect(countedAs('192.0.2.7')).toBe('192.0.2.7');
    expect(countedAs('192.0.2.8')).toBe('192.0.2.8');
    expect(countedAs('127.0.0.1')).toBe('127.0.0.1');
  });

  it('counts every address of an IPv6 /64 as that /64, however it is spelled', () => {
    const network = '2001:db8:1:2::/64';
    for (const address of ['2001:db8:1:2::1', '2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:0DB8:0001:0002:0000:0000:0000:0009', '2001:db8:1:2:abcd::7'])
      expect(countedAs(address), address).toBe(network);
    expect(countedAs('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(countedAs('::1')).toBe('::/64');
    expect(countedAs('fe80::1%eth0')).toBe('fe80::/64');
  });

  it('counts an IPv4-mapped IPv6 address as its IPv4 address', () => {
    expect(countedAs('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(countedAs('::ffff:c000:207')).toBe('192.0.2.7');
  });

  it('keeps anything that is not an address as it is', () => {
    expect(countedAs('')).toBe('');
    expect(countedAs('not-an-address')).toBe('not-an-address');
  });
});
