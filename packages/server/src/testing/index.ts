/**
 * Test and benchmark utilities shipped with the server (`@hookrelay/server/testing`), so the
 * server's tests, the e2e suite and the benchmarks share one way to start a throwaway PostgreSQL.
 */
export { startPgCluster, findPgBin, freePort, type PgCluster, type PgClusterOptions } from './pg-cluster.js';
