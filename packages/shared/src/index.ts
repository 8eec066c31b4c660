export * from './errors.js';
export * from './ids.js';
export * from './envelope.js';
export * from './signing.js';
export * from './client.js';
export * from './schemas/common.js';
export * from './schemas/outbound-endpoints.js';
export * from './schemas/whoami.js';
