import { InboundEndpointCreateIn, InboundEndpointUpdateIn } from '@hookrelay/shared';
import { describe, expect, it } from 'vitest';
import { inboundSettingsBody } from '../src/flags/inbound.js';

describe('inboundSettingsBody', () => {
  it('sends nothing for no flags, so a PATCH changes nothing', () => {
    expect(inboundSettingsBody({})).toEqual({});
  });

  it('maps every flag to its API field', () => {
    const body = inboundSettingsBody({
      name: 'github',
      description: 'd',
      mode: 'forward',
      url: 'https://example.com/hook',
      'static-token-header': 'X-Token',
      'static-token-query': 'token',
      'hmac-scheme': 'github',
      'hmac-header': 'X-Sig',
      'timestamp-header': 'X-Ts',
      'timestamp-tolerance': 60,
      'idempotency-header': ['X-Id', 'Stripe-Event-Id'],
      'response-code': 202,
      signing: true,
    });
    expect(body).toEqual({
      name: 'github',
      description: 'd',
      mode: 'forward',
      url: 'https://example.com/hook',
      static_token_header_name: 'X-Token',
      static_token_query_param: 'token',
      hmac_scheme: 'github',
      hmac_header_name: 'X-Sig',
      timestamp_header_name: 'X-Ts',
      timestamp_tolerance_seconds: 60,
      idempotency_header_names: ['X-Id', 'Stripe-Event-Id'],
      ingest_response_code: 202,
      signing_enabled: true,
    });
    // The body is what the API's own schema accepts.
    expect(InboundEndpointCreateIn.safeParse(body).success).toBe(true);
  });

  it('turns a check on with its secret or list', () => {
    expect(inboundSettingsBody({ 'static-token': 's3cret', 'static-token-header': 'X-Token' })).toEqual({
      static_token: 's3cret',
      verify_static_token: true,
      static_token_header_name: 'X-Token',
    });
    expect(inboundSettingsBody({ 'hmac-secret': 'k', 'hmac-scheme': 'stripe' })).toEqual({ hmac_secret: 'k', verify_hmac: true, hmac_scheme: 'stripe' });
    expect(inboundSettingsBody({ 'allow-cidr': ['203.0.113.0/24'] })).toEqual({ allowed_cidrs: ['203.0.113.0/24'], verify_ip_allowlist: true });
  });

  it('does not turn a check on for its header or scheme alone', () => {
    expect(inboundSettingsBody({ 'hmac-scheme': 'github' })).toEqual({ hmac_scheme: 'github' });
    expect(inboundSettingsBody({ 'static-token-header': 'X-Token' })).toEqual({ static_token_header_name: 'X-Token' });
  });

  it('lets an explicit --verify-… / --no-verify-… win over what a secret implies', () => {
    expect(inboundSettingsBody({ 'hmac-secret': 'k', 'verify-hmac': false })).toEqual({ hmac_secret: 'k', verify_hmac: false });
    expect(inboundSettingsBody({ 'static-token': 't', 'verify-static-token': false })).toMatchObject({ verify_static_token: false });
    expect(inboundSettingsBody({ 'allow-cidr': ['10.0.0.0/8'], 'verify-ip': false })).toMatchObject({ verify_ip_allowlist: false });
    expect(inboundSettingsBody({ 'verify-ip': true })).toEqual({ verify_ip_allowlist: true });
    expect(inboundSettingsBody({ signing: false })).toEqual({ signing_enabled: false });
  });

  it('clears lists and passes empty strings through (PATCH clears those settings)', () => {
    const body = inboundSettingsBody({ 'clear-allow-cidrs': true, 'clear-idempotency-headers': true, url: '', 'hmac-header': '' });
    expect(body).toEqual({ allowed_cidrs: [], idempotency_header_names: [], url: '', hmac_header_name: '' });
    expect(InboundEndpointUpdateIn.safeParse(body).success).toBe(true);
  });
});
